//! Kernels of the software device: Rust closures, their launches, and what a body sees of
//! memory while it runs.

use crate::device::state::Allocation;
use crate::device::stats::ExecStats;
use kreplay_core::backend::DeviceId;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// Threads per warp, for `sim__warps_launched.sum`.
pub const WARP_SIZE: u64 = 32;

/// The body of a kernel: runs once per launch over the whole grid (the closure loops over the
/// threads it needs; [`KernelContext::threads`] says how many there are).
pub type KernelBody = dyn Fn(&mut KernelContext<'_>) + Send + Sync;

pub(super) struct KernelDef {
    pub(super) id: u64,
    pub(super) mangled: String,
    pub(super) demangled: String,
    pub(super) body: Box<KernelBody>,
}

/// A kernel function of the software device. Cheap to clone.
#[derive(Clone)]
pub struct SimKernel {
    pub(super) def: Arc<KernelDef>,
}

impl fmt::Debug for SimKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimKernel")
            .field("id", &self.def.id)
            .field("name", &self.def.demangled)
            .finish()
    }
}

impl SimKernel {
    /// `mangled` is what a module would call the symbol, `demangled` what the filters match.
    pub fn new(
        id: u64,
        mangled: impl Into<String>,
        demangled: impl Into<String>,
        body: impl Fn(&mut KernelContext<'_>) + Send + Sync + 'static,
    ) -> SimKernel {
        SimKernel {
            def: Arc::new(KernelDef {
                id,
                mangled: mangled.into(),
                demangled: demangled.into(),
                body: Box::new(body),
            }),
        }
    }

    pub fn id(&self) -> u64 {
        self.def.id
    }
    pub fn mangled_name(&self) -> &str {
        &self.def.mangled
    }
    pub fn demangled_name(&self) -> &str {
        &self.def.demangled
    }
}

/// One launch: kernel, geometry and arguments (addresses and scalars), kept for re-execution;
/// `device` is the device it runs on (the runtime sets it at the launch).
#[derive(Debug, Clone)]
pub struct SimLaunch {
    pub kernel: SimKernel,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub args: Vec<u64>,
    pub device: DeviceId,
}

impl SimLaunch {
    pub fn threads(&self) -> u64 {
        let blocks: u64 = self.grid.iter().map(|&g| u64::from(g)).product();
        let per_block: u64 = self.block.iter().map(|&b| u64::from(b)).product();
        blocks * per_block
    }

    pub fn warps(&self) -> u64 {
        let blocks: u64 = self.grid.iter().map(|&g| u64::from(g)).product();
        let per_block: u64 = self.block.iter().map(|&b| u64::from(b)).product();
        blocks * per_block.div_ceil(WARP_SIZE)
    }
}

/// What a kernel body sees: its arguments and the device's memory, with every access counted.
pub struct KernelContext<'a> {
    pub(super) memory: &'a mut BTreeMap<u64, Allocation>,
    pub(super) launch: &'a SimLaunch,
    pub(super) stats: ExecStats,
    pub(super) fault: Option<(u64, u64)>,
}

impl KernelContext<'_> {
    /// Argument `index` (0 if absent).
    pub fn arg(&self, index: usize) -> u64 {
        self.launch.args.get(index).copied().unwrap_or(0)
    }

    /// Threads in the grid.
    pub fn threads(&self) -> u64 {
        self.launch.threads()
    }

    /// Counts `n` warp instructions (deterministic work the kernel reports).
    pub fn count_instructions(&mut self, n: u64) {
        self.stats.instructions += n;
    }

    fn span(&mut self, address: u64, bytes: u64) -> Option<(&mut Allocation, usize)> {
        let found = self
            .memory
            .range_mut(..=address)
            .next_back()
            .filter(|(base, a)| address + bytes <= **base + a.data.len() as u64)
            .map(|(base, a)| {
                let offset = (address - *base) as usize;
                (a, offset)
            });
        if found.is_none() && self.fault.is_none() {
            self.fault = Some((address, bytes));
        }
        found
    }

    pub fn read_u32(&mut self, address: u64) -> u32 {
        self.stats.bytes_read += 4;
        match self.span(address, 4) {
            Some((a, o)) => u32::from_le_bytes(a.data[o..o + 4].try_into().unwrap_or([0; 4])),
            None => 0,
        }
    }

    pub fn write_u32(&mut self, address: u64, value: u32) {
        self.stats.bytes_written += 4;
        if let Some((a, o)) = self.span(address, 4) {
            a.data[o..o + 4].copy_from_slice(&value.to_le_bytes());
        }
    }
}
