//! A dispatch slice's name and arguments (`TrackEvent.debug_annotations`), with what is the same
//! for many slices encoded once: the arguments' names, each counter's name, each kernel's name
//! and symbol facts (issue 49: millions of slices).
//!
//! The arguments: rocprofv3's (`begin_ns`, `end_ns`, `delta_ns`, `kind`, `corr_id`, `queue`,
//! `tid`, `kernel_id`, `Scratch_Size`, `LDS_Block_Size`, the register counts, `workgroup_size`,
//! `grid_size` in work-items, `stream_ID`), then kreplay's: `dispatch_id`, `replay_pass` on every
//! slice of a kernel-replay run (0 for a dispatch that ran once), with counters the run's cache
//! control and the cache state and clocks its replay cost recorded, and the counters its pass
//! measured.

use super::spilled::{CostFacts, Names, Pass};
use super::wire::{self, Name};
use super::CATEGORY;
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

/// What a slice takes from its kernel's symbol.
struct Kernel {
    /// `categories` and `name`, encoded ([`wire::named`]).
    named: Vec<u8>,
    local_bytes: u64,
    static_shared_bytes: u64,
    registers: u64,
}

/// The encoded names of a process's slices' arguments, and its kernels' facts as met.
pub(super) struct SliceArgs<'a> {
    process: &'a ProcessRun,
    replay: bool,
    fixed: [Name; 17],
    replay_pass: Name,
    cache_control: Name,
    cache: Name,
    clocks: [Name; 2],
    /// A clock range's text, written into again for each slice.
    clock: String,
    /// Counter names by number (see [`Names`]), encoded as met.
    counters: Vec<Option<Name>>,
    kernels: IdMap<u64, Kernel>,
}

impl<'a> SliceArgs<'a> {
    pub(super) fn new(process: &'a ProcessRun, replay: bool) -> Self {
        SliceArgs {
            process,
            replay,
            fixed: FIXED.map(Name::new),
            replay_pass: Name::new("replay_pass"),
            cache_control: Name::new("cache_control"),
            cache: Name::new("cache"),
            clocks: ["sm_clock_mhz", "memory_clock_mhz"].map(Name::new),
            clock: String::new(),
            counters: Vec::new(),
            kernels: IdMap::default(),
        }
    }

    fn kernel(&mut self, kernel_id: u64) -> &Kernel {
        let process = self.process;
        self.kernels.entry(kernel_id).or_insert_with(|| {
            let symbol = process.kernel(kernel_id);
            // The demangled name whatever `-M`/`-T`/`--kernel-rename` say, as rocprofv3's
            // Perfetto trace names its kernel slices (`generatePerfetto.cpp`).
            let named = match symbol {
                Some(k) => wire::named(CATEGORY, &k.demangled_name),
                None => wire::named(CATEGORY, &format!("kernel {kernel_id}")),
            };
            let field = |field: fn(&crate::records::KernelSymbol) -> u32| {
                u64::from(symbol.map_or(0, field))
            };
            Kernel {
                named,
                local_bytes: field(|k| k.local_bytes),
                static_shared_bytes: field(|k| k.static_shared_bytes),
                registers: field(|k| k.registers),
            }
        })
    }

    /// Writes a slice's arguments into `event`, then (after `kind`, which `kind` writes) its
    /// category and name.
    pub(super) fn write(
        &mut self,
        event: &mut wire::Event,
        pass: &Pass,
        cost: Option<&CostFacts>,
        names: &Names,
        kind: impl FnOnce(&mut wire::Event),
    ) -> io::Result<()> {
        let record = &pass.record;
        let product = |d: [u32; 3]| d.iter().map(|&n| u64::from(n)).product::<u64>();
        let threads = product(record.grid) * product(record.block);
        let end = record.end_ns.max(record.start_ns);
        let kernel = self.kernel(record.kernel_id);
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
            let index = number as usize;
            if self.counters.len() <= index {
                self.counters.resize_with(index + 1, || None);
            }
            let name = match &mut self.counters[index] {
                Some(name) => name,
                empty => empty.insert(Name::new(names.name(number)?)),
            };
            event.double(name, value);
        }
        kind(event);
        let kernel_id = record.kernel_id;
        event.named(&self.kernel(kernel_id).named);
        Ok(())
    }
}
