//! A dispatch slice's name and arguments (`TrackEvent.debug_annotations`), with what is the same
//! for many slices written once: the arguments' names, each counter's name and each kernel's name
//! interned ([`super::interned`]), each kernel's symbol facts looked up once (issue 49: millions
//! of slices).
//!
//! The arguments: rocprofv3's (`begin_ns`, `end_ns`, `delta_ns`, `kind`, `corr_id`, `queue`,
//! `tid`, `kernel_id`, `Scratch_Size`, `LDS_Block_Size`, the register counts, `workgroup_size`,
//! `grid_size` in work-items, `stream_ID`), then kreplay's: `dispatch_id`, `replay_pass` on every
//! slice of a kernel-replay run (0 for a dispatch that ran once), with counters the run's cache
//! control and the cache state and clocks its replay cost recorded, and the counters its pass
//! measured.

use super::interned::{Interner, Kind};
use super::spilled::{CostFacts, Names, Pass};
use super::wire::{self, Name};
use super::{EventType, CATEGORY};
use crate::run::ProcessRun;
use rustc_hash::FxHashMap as IdMap;
use std::collections::hash_map::Entry;
use std::fmt::Write;
use std::io;

/// rocprofv3's buffer-tracing kind of kernel dispatches (`kind` of rocprofv3's slices).
const KIND_KERNEL_DISPATCH: i64 = 11;

/// The arguments every slice has, in their order (`kind` is the fourth).
const FIXED: [&str; 17] = [
    "begin_ns",
    "end_ns",
    "delta_ns",
    "kind",
    "corr_id",
    "queue",
    "tid",
    "kernel_id",
    "Scratch_Size",
    "LDS_Block_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "workgroup_size",
    "grid_size",
    "stream_ID",
    "dispatch_id",
];

/// The numbers of a process's slice names in the file's interned names ([`interned`]): its
/// category, each argument's name, each counter's (by [`Names`] number) and each kernel's.
pub(super) struct SliceNames {
    category: u64,
    fixed: [u64; 17],
    replay_pass: u64,
    cache_control: u64,
    cache: u64,
    clocks: [u64; 2],
    counters: Vec<u64>,
    kernels: IdMap<u64, u64>,
}

impl SliceNames {
    /// Numbers the names the slices of `process` use: its counters `names` and the kernels of
    /// `kernel_ids` (those its records name).
    pub(super) fn intern(
        interner: &mut Interner,
        process: &ProcessRun,
        names: &Names,
        kernel_ids: impl IntoIterator<Item = u64>,
    ) -> SliceNames {
        let mut argument = |name: &str| interner.iid(Kind::AnnotationName, name);
        let fixed = FIXED.map(&mut argument);
        let replay_pass = argument("replay_pass");
        let cache_control = argument("cache_control");
        let cache = argument("cache");
        let clocks = ["sm_clock_mhz", "memory_clock_mhz"].map(&mut argument);
        let counters = names.all().iter().map(|name| argument(name)).collect();
        let category = interner.iid(Kind::Category, CATEGORY);
        let kernels = kernel_ids
            .into_iter()
            .map(|id| (id, interner.iid(Kind::EventName, &kernel_name(process, id))))
            .collect();
        SliceNames {
            category,
            fixed,
            replay_pass,
            cache_control,
            cache,
            clocks,
            counters,
            kernels,
        }
    }
}

/// A kernel's slice name: the demangled name whatever `-M`/`-T`/`--kernel-rename` say, as
/// rocprofv3's Perfetto trace names its kernel slices (`generatePerfetto.cpp`).
fn kernel_name(process: &ProcessRun, kernel_id: u64) -> String {
    match process.kernel(kernel_id) {
        Some(k) => k.demangled_name.clone(),
        None => format!("kernel {kernel_id}"),
    }
}

/// What a slice takes from its kernel's symbol.
struct Kernel {
    /// The kernel's name, interned.
    name: u64,
    local_bytes: u64,
    static_shared_bytes: u64,
    registers: u64,
}

/// The names of a process's slices' arguments, and its kernels' facts as met.
pub(super) struct SliceArgs<'a> {
    process: &'a ProcessRun,
    replay: bool,
    names: &'a SliceNames,
    fixed: [Name; 17],
    replay_pass: Name,
    cache_control: Name,
    cache: Name,
    clocks: [Name; 2],
    /// A clock range's text, written into again for each slice.
    clock: String,
    /// Counter names by number (see [`Names`]).
    counters: Vec<Name>,
    kernels: IdMap<u64, Kernel>,
}

impl<'a> SliceArgs<'a> {
    pub(super) fn new(process: &'a ProcessRun, replay: bool, names: &'a SliceNames) -> Self {
        SliceArgs {
            process,
            replay,
            names,
            fixed: names.fixed.map(Name::interned),
            replay_pass: Name::interned(names.replay_pass),
            cache_control: Name::interned(names.cache_control),
            cache: Name::interned(names.cache),
            clocks: names.clocks.map(Name::interned),
            clock: String::new(),
            counters: names
                .counters
                .iter()
                .map(|&iid| Name::interned(iid))
                .collect(),
            kernels: IdMap::default(),
        }
    }

    fn kernel(&mut self, kernel_id: u64) -> io::Result<&Kernel> {
        let process = self.process;
        let names = self.names;
        match self.kernels.entry(kernel_id) {
            Entry::Occupied(kernel) => Ok(kernel.into_mut()),
            Entry::Vacant(place) => {
                let name = *names.kernels.get(&kernel_id).ok_or_else(|| {
                    io::Error::other("a record names a kernel its process's read did not meet")
                })?;
                let symbol = process.kernel(kernel_id);
                let field = |field: fn(&crate::records::KernelSymbol) -> u32| {
                    u64::from(symbol.map_or(0, field))
                };
                Ok(place.insert(Kernel {
                    name,
                    local_bytes: field(|k| k.local_bytes),
                    static_shared_bytes: field(|k| k.static_shared_bytes),
                    registers: field(|k| k.registers),
                }))
            }
        }
    }

    /// Writes a slice's begin on `track` into `event`: its category, arguments, then its type,
    /// name and track.
    pub(super) fn write_begin(
        &mut self,
        event: &mut wire::Event,
        pass: &Pass,
        cost: Option<&CostFacts>,
        track: u64,
    ) -> io::Result<()> {
        let record = &pass.record;
        let product = |d: [u32; 3]| d.iter().map(|&n| u64::from(n)).product::<u64>();
        let threads = product(record.grid) * product(record.block);
        let end = record.end_ns.max(record.start_ns);
        event.category(self.names.category);
        let kernel = self.kernel(record.kernel_id)?;
        let kernel_name = kernel.name;
        let values = [
            record.start_ns,
            record.end_ns,
            end - record.start_ns,
            0,
            record.correlation_id,
            record.stream_id,
            record.tid,
            record.kernel_id,
            kernel.local_bytes,
            kernel.static_shared_bytes + u64::from(record.dynamic_shared_bytes),
            kernel.registers,
            0,
            0,
            product(record.block),
            threads,
            record.stream_id,
            record.dispatch_id,
        ];
        for (index, (name, value)) in self.fixed.iter().zip(values).enumerate() {
            match index {
                3 => event.int(name, KIND_KERNEL_DISPATCH),
                _ => event.uint(name, value),
            }
        }
        if self.replay {
            let replay_pass = u64::from(record.replay_pass.unwrap_or(0));
            event.uint(&self.replay_pass, replay_pass);
        }
        if !pass.counters.is_empty() {
            let cache_control = self.process.process.cache_control.as_str();
            event.text(&self.cache_control, cache_control);
            if let Some(cost) = cost {
                event.text(&self.cache, cost.cache.as_str());
                let clocks = [cost.sm_clock_mhz, cost.memory_clock_mhz];
                for (name, [low, high]) in self.clocks.iter().zip(clocks) {
                    if high > 0 {
                        self.clock.clear();
                        let _ = write!(self.clock, "{low}-{high}");
                        event.text(name, &self.clock);
                    }
                }
            }
        }
        for &(number, value) in &pass.counters {
            let name = self
                .counters
                .get(number as usize)
                .ok_or_else(|| io::Error::other("a sorted record names an unknown counter"))?;
            event.double(name, value);
        }
        event.kind(EventType::SliceBegin, Some(kernel_name), track);
        Ok(())
    }
}
