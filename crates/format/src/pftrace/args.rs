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
    cache: Name,
    clocks: [Name; 2],
    /// A clock range's text, written into again for each slice.
    clock: String,
    /// Counter names by number (see [`Names`]), interned as met.
    counters: Vec<Option<Name>>,
    /// Kernels by id, their names interned as met.
    kernels: IdMap<u64, Kernel>,
    /// Arguments the same for many slices, encoded once: `kind`; those a launch's kernel and
    /// shape decide (`kernel_id` to `grid_size`), by launch; the run's cache control; and
    /// those of the replay cost met last.
    kind: wire::Event,
    launches: IdMap<Launch, wire::Event>,
    cache_control_arg: wire::Event,
    cost_args: Option<(CostFacts, wire::Event)>,
}

/// What decides a slice's arguments from `kernel_id` to `grid_size`: its kernel, dynamic shared
/// memory, grid and block.
type Launch = (u64, u32, [u32; 3], [u32; 3]);

/// How many launches' arguments are kept (all are forgotten when more come).
const LAUNCHES: usize = 4096;

impl<'a> SliceArgs<'a> {
    /// The slices of `process`, their category and arguments' names interned now (the names
    /// of its kernels and counters are, as met, by [`SliceArgs::intern`]).
    pub(super) fn new(process: &'a ProcessRun, replay: bool, interner: &mut Interner) -> Self {
        let mut name = |name: &str| Name::interned(interner.iid(Kind::AnnotationName, name));
        // Interned in this order: the names' numbers are in the trace.
        let (fixed, replay_pass) = (FIXED.map(&mut name), name("replay_pass"));
        let (cache_control, cache) = (name("cache_control"), name("cache"));
        let clocks = ["sm_clock_mhz", "memory_clock_mhz"].map(&mut name);
        let mut kind = wire::Event::default();
        kind.int(&fixed[3], KIND_KERNEL_DISPATCH);
        let mut cache_control_arg = wire::Event::default();
        cache_control_arg.text(&cache_control, process.process.cache_control.as_str());
        SliceArgs {
            process,
            replay,
            fixed,
            replay_pass,
            cache,
            clocks,
            clock: String::new(),
            category: interner.iid(Kind::Category, CATEGORY),
            counters: Vec::new(),
            kernels: IdMap::default(),
            kind,
            launches: IdMap::default(),
            cache_control_arg,
            cost_args: None,
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
        let end = record.end_ns.max(record.start_ns);
        let unmet = || io::Error::other("a slice's names were not interned before it");
        event.category(self.category);
        let kernel = self.kernels.get(&record.kernel_id).ok_or_else(unmet)?;
        let kernel_name = kernel.name;
        let fixed = &self.fixed;
        for (name, value) in
            fixed[..3]
                .iter()
                .zip([record.start_ns, record.end_ns, end - record.start_ns])
        {
            event.uint(name, value);
        }
        event.append(&self.kind);
        for (name, value) in
            fixed[4..7]
                .iter()
                .zip([record.correlation_id, record.stream_id, record.tid])
        {
            event.uint(name, value);
        }
        let launch = (
            record.kernel_id,
            record.dynamic_shared_bytes,
            record.grid,
            record.block,
        );
        if !self.launches.contains_key(&launch) {
            if self.launches.len() >= LAUNCHES {
                self.launches.clear();
            }
            let product = |d: [u32; 3]| d.iter().map(|&n| u64::from(n)).product::<u64>();
            let values = [
                record.kernel_id,
                kernel.local_bytes,
                kernel.static_shared_bytes + u64::from(record.dynamic_shared_bytes),
                kernel.registers,
                0,
                0,
                product(record.block),
                product(record.grid) * product(record.block),
            ];
            let mut args = wire::Event::default();
            for (name, value) in fixed[7..15].iter().zip(values) {
                args.uint(name, value);
            }
            self.launches.insert(launch, args);
        }
        event.append(&self.launches[&launch]);
        event.uint(&fixed[15], record.stream_id);
        event.uint(&fixed[16], record.dispatch_id);
        if self.replay {
            let replay_pass = u64::from(record.replay_pass.unwrap_or(0));
            event.uint(&self.replay_pass, replay_pass);
        }
        if !pass.counters.is_empty() {
            event.append(&self.cache_control_arg);
            if let Some(cost) = cost {
                if self.cost_args.as_ref().is_none_or(|(met, _)| met != cost) {
                    let mut args = wire::Event::default();
                    args.text(&self.cache, cost.cache.as_str());
                    let clocks = [cost.sm_clock_mhz, cost.memory_clock_mhz];
                    for (name, [low, high]) in self.clocks.iter().zip(clocks) {
                        if high > 0 {
                            self.clock.clear();
                            let _ = write!(self.clock, "{low}-{high}");
                            args.text(name, &self.clock);
                        }
                    }
                    self.cost_args = Some((*cost, args));
                }
                if let Some((_, args)) = &self.cost_args {
                    event.append(args);
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
