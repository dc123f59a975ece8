//! The parameter blocks of the calls that change an executable graph after its instantiation,
//! and of a graph launch (whose executable the tool may swap at its ENTER callback).

use kreplay_cupti_sys as sys;
use std::ffi::c_void;

/// What a call that changes an executable graph did to it.
#[derive(Clone, Copy)]
pub enum ExecChange {
    /// A kernel node's new parameters, as the second version's block.
    KernelNode {
        exec: sys::CUgraphExec,
        node: sys::CUgraphNode,
        params: sys::CUDA_KERNEL_NODE_PARAMS,
    },
    /// `exec` updated from `graph` (`cuGraphExecUpdate`).
    Updated {
        graph: sys::CUgraph,
        exec: sys::CUgraphExec,
    },
    /// Any other change of `exec` (other node kinds, a node enabled, parameters not given).
    Other { exec: sys::CUgraphExec },
}

/// What the call `call` (its name, `_ptsz` or not) did to an executable graph.
///
/// # Safety
/// `params` is the non-NULL parameter block of `call` as `generated_cuda_meta.h` declares it,
/// inside its callback, and `call` changes an executable graph: every such block begins with
/// the executable graph.
pub unsafe fn exec_change(call: &str, params: *const c_void) -> ExecChange {
    let p = params;
    // SAFETY: the caller's contract.
    unsafe {
        let (exec, set): (
            sys::CUgraphExec,
            Option<(sys::CUgraphNode, sys::CUDA_KERNEL_NODE_PARAMS)>,
        ) = match call.strip_suffix("_ptsz").unwrap_or(call) {
            "cuGraphExecKernelNodeSetParams" => {
                // The first version's block lacks the kernel and context handles.
                let p = &*(p as *const sys::cuGraphExecKernelNodeSetParams_params);
                let set = p.nodeParams.as_ref().map(|v1| {
                    let params = sys::CUDA_KERNEL_NODE_PARAMS {
                        func: v1.func,
                        gridDimX: v1.gridDimX,
                        gridDimY: v1.gridDimY,
                        gridDimZ: v1.gridDimZ,
                        blockDimX: v1.blockDimX,
                        blockDimY: v1.blockDimY,
                        blockDimZ: v1.blockDimZ,
                        sharedMemBytes: v1.sharedMemBytes,
                        kernelParams: v1.kernelParams,
                        extra: v1.extra,
                        ..Default::default()
                    };
                    (p.hNode, params)
                });
                (p.hGraphExec, set)
            }
            "cuGraphExecKernelNodeSetParams_v2" => {
                let p = &*(p as *const sys::cuGraphExecKernelNodeSetParams_v2_params);
                (p.hGraphExec, p.nodeParams.as_ref().map(|k| (p.hNode, *k)))
            }
            "cuGraphExecNodeSetParams" => {
                let p = &*(p as *const sys::cuGraphExecNodeSetParams_params);
                let set = p
                    .nodeParams
                    .as_ref()
                    .filter(|n| n.type_ == sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_KERNEL)
                    // The third version's block has the second's fields, in its order.
                    .map(|n| {
                        let k: sys::CUDA_KERNEL_NODE_PARAMS =
                            std::mem::transmute(n.__bindgen_anon_1.kernel);
                        (p.hNode, k)
                    });
                (p.hGraphExec, set)
            }
            "cuGraphExecUpdate" | "cuGraphExecUpdate_v2" => {
                let p = &*(p as *const sys::cuGraphExecUpdate_v2_params);
                return ExecChange::Updated {
                    graph: p.hGraph,
                    exec: p.hGraphExec,
                };
            }
            _ => (*(p as *const sys::CUgraphExec), None),
        };
        match set {
            Some((node, params)) => ExecChange::KernelNode { exec, node, params },
            None => ExecChange::Other { exec },
        }
    }
}

/// The parameter block of `cuGraphLaunch` (the `_ptsz` block has the same fields), at its ENTER
/// callback.
pub struct GraphLaunch {
    params: *mut sys::cuGraphLaunch_params,
}

impl GraphLaunch {
    /// # Safety
    /// `params` is the non-NULL parameter block of `cuGraphLaunch(_ptsz)`, and the value is
    /// used only during that call's ENTER callback.
    pub unsafe fn from_params(params: *const c_void) -> Self {
        GraphLaunch {
            params: params as *mut sys::cuGraphLaunch_params,
        }
    }

    /// The executable graph launched.
    pub fn exec(&self) -> sys::CUgraphExec {
        // SAFETY: a live block (the constructor's contract).
        unsafe { (*self.params).hGraph }
    }

    /// The stream as the application named it.
    pub fn stream(&self) -> sys::CUstream {
        // SAFETY: as above.
        unsafe { (*self.params).hStream }
    }

    /// Makes the call launch `stand_in` instead: at its ENTER callback the driver launches the
    /// executable graph its block holds when the callback returns (bench/probes/graph_swap.sh).
    pub fn launch_instead(&self, stand_in: sys::CUgraphExec) {
        // SAFETY: the call's own parameter block, at its ENTER callback (as above).
        unsafe { (*self.params).hGraph = stand_in };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_third_kernel_node_block_has_the_second_ones_layout() {
        use std::mem::{offset_of, size_of};
        type V2 = sys::CUDA_KERNEL_NODE_PARAMS;
        type V3 = sys::CUDA_KERNEL_NODE_PARAMS_v3;
        assert_eq!(size_of::<V2>(), size_of::<V3>());
        assert_eq!(offset_of!(V2, func), offset_of!(V3, func));
        assert_eq!(offset_of!(V2, gridDimX), offset_of!(V3, gridDimX));
        assert_eq!(
            offset_of!(V2, sharedMemBytes),
            offset_of!(V3, sharedMemBytes)
        );
        assert_eq!(offset_of!(V2, kernelParams), offset_of!(V3, kernelParams));
        assert_eq!(offset_of!(V2, extra), offset_of!(V3, extra));
        assert_eq!(offset_of!(V2, kern), offset_of!(V3, kern));
        assert_eq!(offset_of!(V2, ctx), offset_of!(V3, ctx));
    }
}
