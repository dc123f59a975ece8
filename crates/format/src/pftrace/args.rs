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

/// A kernel's slice name: the demangled name whatever `-M`/`-T`/`--kernel-rename` say, as
/// rocprofv3's Perfetto trace names its kernel slices (`generatePerfetto.cpp`).
fn kernel_name(process: &ProcessRun, kernel_id: u64) -> String {
    match process.kernel(kernel_id) {
        Some(k) => k.demangled_name.clone(),
        None => format!("kernel {kernel_id}"),
    }
}

/// What a slice takes from its kernel's symbol.
#[derive(Clone)]
struct Kernel {
    /// The kernel's name, interned.
    name: u64,
    local_bytes: u64,
    static_shared_bytes: u64,
    registers: u64,
}

/// The names of a process's slices and of their arguments, interned ([`super::interned`]), and
/// its kernels' facts as met.
#[derive(Clone)]
pub(super) struct SliceArgs<'a> {
    process: &'a ProcessRun,
    replay: bool,
    category: u64,
    fixed: [Name; 17],
    replay_pass: Name,
    cache_control: Name,
    cache: Name,
    clocks: [Name; 2],
    /// A clock range's text, written into again for each slice.
    clock: String,
    /// Counter names by number (see [`Names`]), interned as met.
    counters: Vec<Option<Name>>,
    /// Kernels by id, their names interned as met.
    kernels: IdMap<u64, Kernel>,
}

impl<'a> SliceArgs<'a> {
    /// The slices of `process`, their category and arguments' names interned now (the names
    /// of its kernels and counters are, as met, by [`SliceArgs::intern`]).
    pub(super) fn new(process: &'a ProcessRun, replay: bool, interner: &mut Interner) -> Self {
        let mut name = |name: &str| Name::interned(interner.iid(Kind::AnnotationName, name));
        SliceArgs {
            process,
            replay,
            fixed: FIXED.map(&mut name),
            replay_pass: name("replay_pass"),
            cache_control: name("cache_control"),
            cache: name("cache"),
            clocks: ["sm_clock_mhz", "memory_clock_mhz"].map(&mut name),
            clock: String::new(),
            category: interner.iid(Kind::Category, CATEGORY),
            counters: Vec::new(),
            kernels: IdMap::default(),
        }
    }

    /// Interns the names `pass`'s slice uses that were not yet: its kernel's, and its counters'
    /// (`names` of their numbers).
    pub(super) fn intern(
        &mut self,
        pass: &Pass,
        names: &Names,
        interner: &mut Interner,
    ) -> io::Result<()> {
        let kernel_id = pass.record.kernel_id;
        if !self.kernels.contains_key(&kernel_id) {
            let symbol = self.process.kernel(kernel_id);
            let field = |field: fn(&crate::records::KernelSymbol) -> u32| {
                u64::from(symbol.map_or(0, field))
            };
            let name = kernel_name(self.process, kernel_id);
            let kernel = Kernel {
                name: interner.iid(Kind::EventName, &name),
                local_bytes: field(|k| k.local_bytes),
                static_shared_bytes: field(|k| k.static_shared_bytes),
                registers: field(|k| k.registers),
            };
            self.kernels.insert(kernel_id, kernel);
        }
        for &(number, _) in &pass.counters {
            let index = number as usize;
            if self.counters.len() <= index {
                self.counters.resize_with(index + 1, || None);
            }
            if self.counters[index].is_none() {
                let iid = interner.iid(Kind::AnnotationName, names.name(number)?);
                self.counters[index] = Some(Name::interned(iid));
            }
        }
        Ok(())
    }

    /// Writes a slice's begin on `track` into `event`: its category, arguments, then its type,
    /// name and track (its names interned by [`SliceArgs::intern`]).
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
        let unmet = || io::Error::other("a slice's names were not interned before it");
        event.category(self.category);
        let kernel = self.kernels.get(&record.kernel_id).ok_or_else(unmet)?;
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
            let name = self.counters.get(number as usize).and_then(Option::as_ref);
            event.double(name.ok_or_else(unmet)?, value);
        }
        event.kind(EventType::SliceBegin, Some(kernel_name), track);
        Ok(())
    }
}
