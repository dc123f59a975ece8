//! The arguments of the software device's API calls, as the CUDA calls they stand for have them
//! (`kreplay_format::api_args` declares them): a caller sets them with [`SimRuntime::set_args`]
//! before (or, for an output such as an allocation's address, inside) its call, and the
//! outermost recorded call takes them when it returns (`api_trace`). Values are held inline:
//! nothing is allocated per call.

use crate::device::SimLaunch;
use crate::runtime::SimRuntime;
use kreplay_core::api_trace::ApiLevel;
use kreplay_core::backend::AllocKind;
use kreplay_format::api_args::{dim3, MAX_ARGS};

/// Raw values of a call's arguments in its declarations' order (`kreplay_format::api_args`
/// writes them by their C types), at most [`MAX_ARGS`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Values {
    raw: [u64; MAX_ARGS],
    len: usize,
}

impl Values {
    fn of(values: &[u64]) -> Values {
        let len = values.len().min(MAX_ARGS);
        let mut raw = [0; MAX_ARGS];
        raw[..len].copy_from_slice(&values[..len]);
        Values { raw, len }
    }

    pub(crate) fn as_slice(&self) -> &[u64] {
        &self.raw[..self.len]
    }
}

/// One call's values: the runtime call's and the driver call's.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SimArgs {
    pub runtime: Values,
    pub driver: Values,
}

impl SimArgs {
    pub(crate) fn new(runtime: &[u64], driver: &[u64]) -> SimArgs {
        SimArgs {
            runtime: Values::of(runtime),
            driver: Values::of(driver),
        }
    }

    /// `cudaLaunchKernel` / `cuLaunchKernel` of `launch` on `stream` (no dynamic shared memory
    /// on this device).
    pub(crate) fn launch(launch: &SimLaunch, stream: u64) -> SimArgs {
        let function = launch.kernel.id();
        let [gx, gy, gz] = launch.grid.map(u64::from);
        let [bx, by, bz] = launch.block.map(u64::from);
        SimArgs::new(
            &[function, dim3(launch.grid), dim3(launch.block), 0, stream],
            &[function, gx, gy, gz, bx, by, bz, 0, stream],
        )
    }

    /// `cudaGraphLaunch` / `cuGraphLaunch` of the graph `graph` (its handle) on `stream`.
    pub(crate) fn graph_launch(graph: u64, stream: u64) -> SimArgs {
        SimArgs::new(&[graph, stream], &[graph, stream])
    }

    /// An allocation of `kind` that returned `address` (`stream`: a pool allocation's).
    pub(crate) fn alloc(kind: AllocKind, address: u64, bytes: u64, stream: u64) -> SimArgs {
        match kind {
            // A pitched allocation of one row.
            AllocKind::Pitched => SimArgs::new(&[address, bytes, 1], &[address, bytes, 1]),
            AllocKind::Pool => SimArgs::new(&[address, bytes, stream], &[address, bytes, stream]),
            AllocKind::VirtualMapping => SimArgs::new(&[], &[address, bytes, 0]),
            _ => SimArgs::new(&[address, bytes], &[address, bytes]),
        }
    }

    /// The free of `address` (memory of `kind`, `bytes` long: an unmap's size).
    pub(crate) fn free(kind: Option<AllocKind>, address: u64, bytes: u64, stream: u64) -> SimArgs {
        match kind {
            Some(AllocKind::Pool) => SimArgs::new(&[address, stream], &[address, stream]),
            Some(AllocKind::VirtualMapping) => SimArgs::new(&[], &[address, bytes]),
            _ => SimArgs::new(&[address], &[address]),
        }
    }

    /// `cudaMemcpy` of `kind` (`cudaMemcpyKind`'s value) over the driver copy the direction
    /// names (`cuMemcpyHtoD_v2`: destination, source, bytes).
    pub(crate) fn copy(dst: u64, src: u64, bytes: u64, kind: u32) -> SimArgs {
        SimArgs::new(&[dst, src, bytes, u64::from(kind)], &[dst, src, bytes])
    }

    /// `cudaMemcpyPeer` / `cuMemcpyPeer`.
    pub(crate) fn copy_peer(
        dst: u64,
        dst_device: u32,
        src: u64,
        src_device: u32,
        bytes: u64,
    ) -> SimArgs {
        let (dst_device, src_device) = (u64::from(dst_device), u64::from(src_device));
        SimArgs::new(
            &[dst, dst_device, src, src_device, bytes],
            &[dst, src, bytes],
        )
    }

    /// `cudaMemset` of `count` 32-bit words of `value` / `cuMemsetD32_v2`.
    pub(crate) fn fill(dst: u64, value: u32, count: u64) -> SimArgs {
        let value = u64::from(value);
        SimArgs::new(&[dst, value, count * 4], &[dst, value, count])
    }
}

impl SimRuntime {
    /// The arguments of the next call the application makes (taken by the outermost recorded
    /// call when it returns). Nothing is kept when no call is recorded.
    pub(crate) fn set_args(&mut self, args: SimArgs) {
        if self
            .engine
            .as_ref()
            .is_some_and(|e| e.api_level() != ApiLevel::Off)
        {
            self.next_args = Some(args);
        }
    }
}
