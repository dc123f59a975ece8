//! A graph's kernel node as a launch of the tool's own: its parameters read from the node (or
//! from a call that changes them), its launch attributes that change what runs kept, its
//! parameter bytes copied. A kernel node the tool cannot run as such is refused with the
//! reason, which declines its graph.

use crate::drv;
use crate::launch::{parameter_layout, LaunchApi, LaunchParams, OwnedLaunch};
use crate::symbols::kernel_function;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUcontext, CUgraphNode};

/// A kernel node's parameters, as the driver's `cuGraphKernelNodeGetParams_v2` and
/// `cuGraphExecKernelNodeSetParams_v2` pass them.
pub type KernelNodeParams = sys::CUDA_KERNEL_NODE_PARAMS;

/// A kernel node as a launch of the tool's own: its parameters copied, its cluster shape,
/// cooperative flag and priority kept as launch attributes (its L2 access policy and memory
/// synchronisation domain are not: they change no result).
pub(super) fn read_kernel_node(
    d: &Driver,
    ctx: CUcontext,
    node: CUgraphNode,
) -> Result<OwnedLaunch, String> {
    let mut p = KernelNodeParams::default();
    // SAFETY: a node of a live graph; writes its parameter block (the driver's own copy,
    // alive with the node).
    unsafe { drv!(d, cuGraphKernelNodeGetParams_v2(node, &mut p)) }.map_err(|e| e.to_string())?;
    let attribute = |id| {
        let mut value = sys::CUlaunchAttributeValue::default();
        // SAFETY: writes one attribute value of a live node.
        unsafe { drv!(d, cuGraphKernelNodeGetAttribute(node, id, &mut value)) }
            .ok()
            .map(|()| value)
    };
    if attribute(sys::CUlaunchAttributeID_enum_CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE)
        // SAFETY: the union's member for the attribute asked for.
        .is_some_and(|v| unsafe { v.deviceUpdatableKernelNode.deviceUpdatable } != 0)
    {
        return Err("a kernel node can be updated from the device".into());
    }
    let mut attrs = Vec::new();
    for id in [
        sys::CUlaunchAttributeID_enum_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        sys::CUlaunchAttributeID_enum_CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
        sys::CUlaunchAttributeID_enum_CU_LAUNCH_ATTRIBUTE_PRIORITY,
    ] {
        let Some(value) = attribute(id) else {
            continue;
        };
        // SAFETY: each arm reads the union's member for the attribute asked for.
        let set = unsafe {
            match id {
                sys::CUlaunchAttributeID_enum_CU_LAUNCH_ATTRIBUTE_COOPERATIVE => {
                    value.cooperative != 0
                }
                sys::CUlaunchAttributeID_enum_CU_LAUNCH_ATTRIBUTE_PRIORITY => value.priority != 0,
                _ => {
                    let c = value.clusterDim;
                    c.x.max(c.y).max(c.z) > 1
                }
            }
        };
        if set {
            attrs.push(sys::CUlaunchAttribute {
                id,
                pad: [0; 4],
                value,
            });
        }
    }
    // SAFETY: the node's own parameter block: one pointer per parameter, each to its bytes.
    unsafe { kernel_launch(d, ctx, &p, attrs) }
}

/// A kernel node's parameters `p` as a launch of the tool's own in `ctx` with `attrs`, its
/// parameter bytes copied; refused when it passes them through `extra`, belongs to another
/// context or has parameters the driver does not describe.
///
/// # Safety
/// `p.kernelParams` points at one pointer per parameter of the kernel, each to its bytes.
pub unsafe fn kernel_launch(
    d: &Driver,
    ctx: CUcontext,
    p: &KernelNodeParams,
    attrs: Vec<sys::CUlaunchAttribute>,
) -> Result<OwnedLaunch, String> {
    if !p.extra.is_null() {
        return Err("a kernel node passes its parameters through `extra`".into());
    }
    if !p.ctx.is_null() && p.ctx != ctx {
        return Err("a kernel node belongs to another context".into());
    }
    let f = if p.func.is_null() {
        p.kern as sys::CUfunction
    } else {
        p.func
    };
    // The tool's launch is the node's only execution: parameters it could not read would run
    // the kernel without them.
    if parameter_layout(d, f).is_empty()
        && !p.kernelParams.is_null()
        && kernel_param_bytes(d, p) != 0
    {
        return Err("the parameters of a kernel node could not be read".into());
    }
    let api = if attrs.is_empty() {
        LaunchApi::Kernel { per_thread: false }
    } else {
        LaunchApi::KernelEx { per_thread: false }
    };
    let shape = LaunchParams {
        f,
        grid: [p.gridDimX, p.gridDimY, p.gridDimZ],
        block: [p.blockDimX, p.blockDimY, p.blockDimZ],
        shared: p.sharedMemBytes,
        stream: std::ptr::null_mut(),
        kernel_params: p.kernelParams,
        extra: std::ptr::null_mut(),
        config: std::ptr::null(),
    };
    // SAFETY: as the caller promises.
    unsafe { OwnedLaunch::from_parts(d, ctx, api, &shape, attrs) }.map_err(|e| e.to_string())
}

/// The bytes of a kernel node's parameters, as the driver describes its function (0 when it
/// cannot say).
fn kernel_param_bytes(d: &Driver, p: &KernelNodeParams) -> u32 {
    let f = if p.func.is_null() {
        match kernel_function(d, p.kern as sys::CUfunction) {
            Ok(f) => f,
            Err(_) => return 0,
        }
    } else {
        p.func
    };
    crate::kernel::function_attributes(d, f).param_bytes
}
