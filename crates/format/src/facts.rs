//! Facts of a dispatch that the CSV and JSON files show alike, NVIDIA's fields mapped onto
//! rocprofv3's names.

use crate::records::{DispatchRecord, KernelSymbol, ProcessInfo};
use crate::run::ProcessRun;

/// Work-items along each axis (rocprofv3's grid counts work-items, CUDA's counts blocks).
pub(crate) fn grid_threads(dispatch: &DispatchRecord) -> [u64; 3] {
    [0, 1, 2].map(|axis| u64::from(dispatch.grid[axis]) * u64::from(dispatch.block[axis]))
}

/// The per-dispatch kernel facts every file shows, NVIDIA fields mapped onto rocprofv3's names.
pub(crate) struct KernelFacts<'a> {
    /// Borrowed from the run or the dispatch: no string per dispatch.
    pub name: &'a str,
    /// Static + dynamic shared memory per block, bytes.
    pub lds_block_size: u64,
    /// Local memory per thread, bytes.
    pub scratch_size: u64,
    /// Registers per thread.
    pub vgpr_count: u64,
}

/// A kernel's name as the run asks (rocprofv3's kernel naming options, its
/// `formatted_kernel_name`): mangled (`-M`, which wins), truncated (`-T`), or demangled.
pub(crate) fn kernel_name<'a>(process: &ProcessInfo, symbol: &'a KernelSymbol) -> &'a str {
    crate::naming::formatted_name(process.mangled_kernels, process.truncate_kernels, symbol)
}

pub(crate) fn kernel_facts<'a>(
    run: &'a ProcessRun,
    dispatch: &'a DispatchRecord,
) -> KernelFacts<'a> {
    let symbol = run.kernel(dispatch.kernel_id);
    KernelFacts {
        name: match dispatch.innermost_range() {
            // rocprofv3's `--kernel-rename`: the dispatch is named by its innermost range.
            Some(range) if run.process.kernel_rename => range,
            _ => symbol.map_or("", |s| kernel_name(&run.process, s)),
        },
        lds_block_size: u64::from(symbol.map_or(0, |s| s.static_shared_bytes))
            + u64::from(dispatch.dynamic_shared_bytes),
        scratch_size: u64::from(symbol.map_or(0, |s| s.local_bytes)),
        vgpr_count: u64::from(symbol.map_or(0, |s| s.registers)),
    }
}
