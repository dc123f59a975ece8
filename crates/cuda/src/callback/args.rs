//! The raw argument values of the runtime and driver calls whose arguments the API trace
//! records (launches, copies, memsets, allocations and frees, stream and event
//! synchronisations), read from CUPTI's parameter block at the call's EXIT, in the order of the
//! declarations `kreplay_format::api_args::declarations` lists for the call (the caller pairs
//! them): addresses and handles as integers, a `dim3` packed as `api_args::dim3` packs it (x in
//! the low 32 bits, y and z 16 bits each), an output pointer's target (the address an
//! allocation returned). Nothing is allocated.
//!
//! Driver blocks are `generated_cuda_meta.h`'s (the bindings); runtime blocks are
//! `generated_cuda_runtime_api_meta.h`'s, declared here for the calls decoded (the bindings do
//! not include that header).

use super::calls::base_name;
use kreplay_cupti_sys as sys;
use std::ffi::c_void;

/// The most values a call has here (`kreplay_format::api_args::MAX_ARGS`).
pub const MAX_ARG_VALUES: usize = 9;

/// A call's argument values, in its declarations' order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RawArgs {
    values: [u64; MAX_ARG_VALUES],
    len: usize,
}

impl RawArgs {
    fn of(values: &[u64]) -> RawArgs {
        let len = values.len().min(MAX_ARG_VALUES);
        let mut held = [0; MAX_ARG_VALUES];
        held[..len].copy_from_slice(&values[..len]);
        RawArgs { values: held, len }
    }

    pub fn as_slice(&self) -> &[u64] {
        &self.values[..self.len]
    }
}

/// CUDA's `dim3`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Dim3 {
    x: u32,
    y: u32,
    z: u32,
}

/// A `dim3` as one value: x in the low 32 bits, y and z 16 bits each above.
fn dim3(d: Dim3) -> u64 {
    u64::from(d.x) | (u64::from(d.y) & 0xffff) << 32 | (u64::from(d.z) & 0xffff) << 48
}

type Ptr = *const c_void;

/// `cudaLaunchKernel_v7000_params`.
#[repr(C)]
struct LaunchKernel {
    func: Ptr,
    grid_dim: Dim3,
    block_dim: Dim3,
    args: Ptr,
    shared_mem: usize,
    stream: Ptr,
}

/// `cudaLaunchConfig_t`'s leading fields.
#[repr(C)]
struct LaunchConfig {
    grid_dim: Dim3,
    block_dim: Dim3,
    dynamic_smem_bytes: usize,
    stream: Ptr,
}

/// `cudaLaunchKernelExC_v11060_params`.
#[repr(C)]
struct LaunchKernelExC {
    config: *const LaunchConfig,
    func: Ptr,
    args: Ptr,
}

/// `cudaMemcpy_v3020_params`, and `cudaMemcpyAsync_v3020_params` with its stream.
#[repr(C)]
struct Memcpy {
    dst: Ptr,
    src: Ptr,
    count: usize,
    kind: u32,
    stream: Ptr,
}

/// `cudaMemcpyPeer_v4000_params`.
#[repr(C)]
struct MemcpyPeer {
    dst: Ptr,
    dst_device: i32,
    src: Ptr,
    src_device: i32,
    count: usize,
}

/// `cudaMemset_v3020_params`, and `cudaMemsetAsync_v3020_params` with its stream.
#[repr(C)]
struct Memset {
    dev_ptr: Ptr,
    value: i32,
    count: usize,
    stream: Ptr,
}

/// `cudaMalloc_v3020_params` (`cudaMallocHost`, `cudaHostAlloc`, `cudaMallocManaged` begin the
/// same), and `cudaMallocAsync_v11020_params` with its stream.
#[repr(C)]
struct Malloc {
    dev_ptr: *const Ptr,
    size: usize,
    stream: Ptr,
}

/// `cudaMallocPitch_v3020_params`.
#[repr(C)]
struct MallocPitch {
    dev_ptr: *const Ptr,
    pitch: *const usize,
    width: usize,
    height: usize,
}

/// One pointer (or handle) then another: `cudaFree`, `cudaFreeHost`,
/// `cudaStreamSynchronize`, `cudaEventSynchronize` (the first alone), `cudaFreeAsync`,
/// `cudaGraphLaunch`.
#[repr(C)]
struct TwoHandles {
    first: Ptr,
    second: Ptr,
}

/// What `pointer` points at (an output argument at EXIT); 0 when NULL.
///
/// # Safety
/// `pointer` is NULL or valid for a read.
unsafe fn target<T: Copy + Into<u64>>(pointer: *const T) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { pointer.as_ref() }.map_or(0, |v| (*v).into())
}

fn addr(p: Ptr) -> u64 {
    p as u64
}

/// The name a call's arguments are declared under: CUPTI's `functionName` without the
/// per-thread-stream suffix and, for a runtime function, without a CUPTI version suffix
/// (`cudaLaunchKernel_v7000` is `cudaLaunchKernel`; a driver function's `_v2` is its own).
pub fn declared_name(name: &str) -> &str {
    let name = base_name(name);
    match name.rsplit_once("_v") {
        // The per-thread suffix may come before the version (`cudaLaunchKernelExC_ptsz_v11060`).
        Some((function, version))
            if function.starts_with("cuda")
                && !version.is_empty()
                && version.bytes().all(|b| b.is_ascii_digit()) =>
        {
            base_name(function)
        }
        _ => name,
    }
}

/// The argument values of the call `name` (CUPTI's `functionName`, per-thread suffix or not)
/// from its parameter block at EXIT; `None` for a call whose arguments are not decoded here,
/// or a NULL block.
///
/// # Safety
/// `params` is NULL or the parameter block of the call named (as CUPTI's generated meta
/// headers declare it), inside its EXIT callback (outputs are written).
pub unsafe fn call_args(name: &str, params: *const c_void) -> Option<RawArgs> {
    if params.is_null() {
        return None;
    }
    let p = params;
    // SAFETY: each call's parameter block (the caller's contract).
    unsafe {
        Some(match declared_name(name) {
            // Runtime API.
            "cudaLaunchKernel" => {
                let p = &*(p as *const LaunchKernel);
                let shared = p.shared_mem as u64;
                RawArgs::of(&[
                    addr(p.func),
                    dim3(p.grid_dim),
                    dim3(p.block_dim),
                    shared,
                    addr(p.stream),
                ])
            }
            // The configuration's fields, after the function (see `api_args::declarations`).
            "cudaLaunchKernelExC" => {
                let p = &*(p as *const LaunchKernelExC);
                match p.config.as_ref() {
                    Some(c) => RawArgs::of(&[
                        addr(p.func),
                        dim3(c.grid_dim),
                        dim3(c.block_dim),
                        c.dynamic_smem_bytes as u64,
                        addr(c.stream),
                    ]),
                    None => RawArgs::of(&[addr(p.func)]),
                }
            }
            "cudaMemcpy" | "cudaMemcpyAsync" => {
                let p = &*(p as *const Memcpy);
                let (dst, src, count, kind) =
                    (addr(p.dst), addr(p.src), p.count as u64, u64::from(p.kind));
                if declared_name(name) == "cudaMemcpyAsync" {
                    RawArgs::of(&[dst, src, count, kind, addr(p.stream)])
                } else {
                    RawArgs::of(&[dst, src, count, kind])
                }
            }
            "cudaMemcpyPeer" => {
                let p = &*(p as *const MemcpyPeer);
                let (dst_device, src_device) = (p.dst_device as u64, p.src_device as u64);
                RawArgs::of(&[
                    addr(p.dst),
                    dst_device,
                    addr(p.src),
                    src_device,
                    p.count as u64,
                ])
            }
            "cudaMemset" | "cudaMemsetAsync" => {
                let p = &*(p as *const Memset);
                let (dst, value, count) = (addr(p.dev_ptr), p.value as u64, p.count as u64);
                if declared_name(name) == "cudaMemsetAsync" {
                    RawArgs::of(&[dst, value, count, addr(p.stream)])
                } else {
                    RawArgs::of(&[dst, value, count])
                }
            }
            "cudaMalloc" | "cudaMallocHost" | "cudaHostAlloc" | "cudaMallocManaged" => {
                let p = &*(p as *const Malloc);
                RawArgs::of(&[target(p.dev_ptr.cast::<u64>()), p.size as u64])
            }
            "cudaMallocAsync" => {
                let p = &*(p as *const Malloc);
                RawArgs::of(&[
                    target(p.dev_ptr.cast::<u64>()),
                    p.size as u64,
                    addr(p.stream),
                ])
            }
            "cudaMallocPitch" => {
                let p = &*(p as *const MallocPitch);
                let allocated = target(p.dev_ptr.cast::<u64>());
                RawArgs::of(&[allocated, p.width as u64, p.height as u64])
            }
            "cudaFree" | "cudaFreeHost" | "cudaStreamSynchronize" | "cudaEventSynchronize" => {
                RawArgs::of(&[addr((*(p as *const TwoHandles)).first)])
            }
            "cudaFreeAsync" | "cudaGraphLaunch" => {
                let p = &*(p as *const TwoHandles);
                RawArgs::of(&[addr(p.first), addr(p.second)])
            }
            // Driver API.
            "cuLaunchKernel" => {
                let p = &*(p as *const sys::cuLaunchKernel_params);
                RawArgs::of(&[
                    p.f as u64,
                    u64::from(p.gridDimX),
                    u64::from(p.gridDimY),
                    u64::from(p.gridDimZ),
                    u64::from(p.blockDimX),
                    u64::from(p.blockDimY),
                    u64::from(p.blockDimZ),
                    u64::from(p.sharedMemBytes),
                    p.hStream as u64,
                ])
            }
            "cuMemcpyHtoD_v2" | "cuMemcpyHtoDAsync_v2" => {
                let p = &*(p as *const sys::cuMemcpyHtoDAsync_v2_params);
                let values = [p.dstDevice, addr(p.srcHost), p.ByteCount as u64];
                with_stream(name, &values, || p.hStream as u64)
            }
            "cuMemcpyDtoH_v2" | "cuMemcpyDtoHAsync_v2" => {
                let p = &*(p as *const sys::cuMemcpyDtoHAsync_v2_params);
                let values = [addr(p.dstHost), p.srcDevice, p.ByteCount as u64];
                with_stream(name, &values, || p.hStream as u64)
            }
            "cuMemcpyDtoD_v2" | "cuMemcpyDtoDAsync_v2" => {
                let p = &*(p as *const sys::cuMemcpyDtoDAsync_v2_params);
                let values = [p.dstDevice, p.srcDevice, p.ByteCount as u64];
                with_stream(name, &values, || p.hStream as u64)
            }
            "cuMemcpy" | "cuMemcpyAsync" => {
                let p = &*(p as *const sys::cuMemcpyAsync_params);
                let values = [p.dst, p.src, p.ByteCount as u64];
                with_stream(name, &values, || p.hStream as u64)
            }
            "cuMemcpyPeer" => {
                let p = &*(p as *const sys::cuMemcpyPeer_params);
                RawArgs::of(&[p.dstDevice, p.srcDevice, p.ByteCount as u64])
            }
            "cuMemsetD32_v2" | "cuMemsetD32Async" => {
                let p = &*(p as *const sys::cuMemsetD32Async_params);
                let values = [p.dstDevice, u64::from(p.ui), p.N as u64];
                with_stream(name, &values, || p.hStream as u64)
            }
            "cuMemsetD8_v2" | "cuMemsetD8Async" => {
                let p = &*(p as *const sys::cuMemsetD8Async_params);
                let values = [p.dstDevice, u64::from(p.uc), p.N as u64];
                with_stream(name, &values, || p.hStream as u64)
            }
            "cuMemAlloc_v2" | "cuMemAllocManaged" => {
                let p = &*(p as *const sys::cuMemAlloc_v2_params);
                RawArgs::of(&[target(p.dptr), p.bytesize as u64])
            }
            "cuMemAllocAsync" => {
                let p = &*(p as *const sys::cuMemAllocAsync_params);
                RawArgs::of(&[target(p.dptr), p.bytesize as u64, p.hStream as u64])
            }
            "cuMemAllocPitch_v2" => {
                let p = &*(p as *const sys::cuMemAllocPitch_v2_params);
                RawArgs::of(&[target(p.dptr), p.WidthInBytes as u64, p.Height as u64])
            }
            "cuMemHostAlloc" | "cuMemAllocHost_v2" => {
                let p = &*(p as *const sys::cuMemAllocHost_v2_params);
                RawArgs::of(&[target(p.pp.cast::<u64>()), p.bytesize as u64])
            }
            "cuMemFree_v2" => RawArgs::of(&[(*(p as *const sys::cuMemFree_v2_params)).dptr]),
            "cuMemFreeHost" => RawArgs::of(&[addr((*(p as *const sys::cuMemFreeHost_params)).p)]),
            "cuMemFreeAsync" => {
                let p = &*(p as *const sys::cuMemFreeAsync_params);
                RawArgs::of(&[p.dptr, p.hStream as u64])
            }
            "cuMemMap" => {
                let p = &*(p as *const sys::cuMemMap_params);
                RawArgs::of(&[p.ptr, p.size as u64, p.offset as u64])
            }
            "cuMemUnmap" => {
                let p = &*(p as *const sys::cuMemUnmap_params);
                RawArgs::of(&[p.ptr, p.size as u64])
            }
            "cuStreamSynchronize" => {
                let p = &*(p as *const sys::cuStreamSynchronize_params);
                RawArgs::of(&[p.hStream as u64])
            }
            "cuEventSynchronize" => {
                let p = &*(p as *const sys::cuEventSynchronize_params);
                RawArgs::of(&[p.hEvent as u64])
            }
            "cuGraphLaunch" => {
                let p = &*(p as *const sys::cuGraphLaunch_params);
                RawArgs::of(&[p.hGraph as u64, p.hStream as u64])
            }
            _ => return None,
        })
    }
}

/// `values`, then the stream (read by `stream`) for the asynchronous form of the call `name`.
fn with_stream(name: &str, values: &[u64; 3], stream: impl FnOnce() -> u64) -> RawArgs {
    if base_name(name).contains("Async") {
        RawArgs::of(&[values[0], values[1], values[2], stream()])
    } else {
        RawArgs::of(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block<T>(value: &T) -> *const c_void {
        value as *const T as *const c_void
    }

    #[test]
    fn a_runtime_launch_gives_its_function_dims_shared_bytes_and_stream() {
        let launch = LaunchKernel {
            func: 0x1000 as Ptr,
            grid_dim: Dim3 { x: 256, y: 2, z: 1 },
            block_dim: Dim3 { x: 128, y: 1, z: 1 },
            args: std::ptr::null(),
            shared_mem: 48,
            stream: 0x5000 as Ptr,
        };
        // SAFETY: the named call's block.
        let args = unsafe { call_args("cudaLaunchKernel_ptsz", block(&launch)) }.unwrap();
        assert_eq!(
            args.as_slice(),
            [
                0x1000,
                256 | 2 << 32 | 1 << 48,
                128 | 1 << 32 | 1 << 48,
                48,
                0x5000
            ]
        );
    }

    #[test]
    fn an_extended_runtime_launch_gives_its_configuration_field_by_field() {
        let config = LaunchConfig {
            grid_dim: Dim3 { x: 4, y: 3, z: 2 },
            block_dim: Dim3 { x: 64, y: 1, z: 1 },
            dynamic_smem_bytes: 1024,
            stream: 0x6000 as Ptr,
        };
        let launch = LaunchKernelExC {
            config: &config,
            func: 0x2000 as Ptr,
            args: std::ptr::null(),
        };
        // SAFETY: the named call's block, its configuration alive.
        let args = unsafe { call_args("cudaLaunchKernelExC_v11060", block(&launch)) }.unwrap();
        assert_eq!(
            args.as_slice(),
            [
                0x2000,
                4 | 3 << 32 | 2 << 48,
                64 | 1 << 32 | 1 << 48,
                1024,
                0x6000
            ]
        );
        let bare = LaunchKernelExC {
            config: std::ptr::null(),
            ..launch
        };
        // SAFETY: as above, without a configuration.
        let args = unsafe { call_args("cudaLaunchKernelExC_ptsz_v11060", block(&bare)) }.unwrap();
        assert_eq!(args.as_slice(), [0x2000]);
    }

    #[test]
    fn an_allocation_gives_the_address_it_returned_and_a_copy_its_sides() {
        let mut allocated: sys::CUdeviceptr = 0x7000;
        let alloc = sys::cuMemAlloc_v2_params {
            dptr: &mut allocated,
            bytesize: 4096,
        };
        // SAFETY: the named call's block, read at its EXIT.
        let args = unsafe { call_args("cuMemAlloc_v2", block(&alloc)) }.unwrap();
        assert_eq!(args.as_slice(), [0x7000, 4096]);

        let mut host: Ptr = 0x9000 as Ptr;
        let malloc = Malloc {
            dev_ptr: &mut host,
            size: 64,
            stream: std::ptr::null(),
        };
        let args = unsafe { call_args("cudaMallocHost", block(&malloc)) }.unwrap();
        assert_eq!(args.as_slice(), [0x9000, 64]);

        let copy = Memcpy {
            dst: 0x10 as Ptr,
            src: 0x20 as Ptr,
            count: 8,
            kind: 2,
            stream: 0x30 as Ptr,
        };
        let args = unsafe { call_args("cudaMemcpyAsync_ptsz", block(&copy)) }.unwrap();
        assert_eq!(args.as_slice(), [0x10, 0x20, 8, 2, 0x30]);
        let args = unsafe { call_args("cudaMemcpy", block(&copy)) }.unwrap();
        assert_eq!(args.as_slice(), [0x10, 0x20, 8, 2]);

        let htod = sys::cuMemcpyHtoDAsync_v2_params {
            dstDevice: 0x7000,
            srcHost: 0x9000 as Ptr,
            ByteCount: 64,
            hStream: 0x40 as sys::CUstream,
        };
        let args = unsafe { call_args("cuMemcpyHtoDAsync_v2_ptsz", block(&htod)) }.unwrap();
        assert_eq!(args.as_slice(), [0x7000, 0x9000, 64, 0x40]);
        // The synchronous block is the asynchronous one without its stream.
        let args = unsafe { call_args("cuMemcpyHtoD_v2", block(&htod)) }.unwrap();
        assert_eq!(args.as_slice(), [0x7000, 0x9000, 64]);
    }

    #[test]
    fn names_are_declared_without_stream_and_runtime_version_suffixes() {
        assert_eq!(declared_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(declared_name("cudaMemcpyAsync_ptsz"), "cudaMemcpyAsync");
        assert_eq!(declared_name("cuMemAlloc_v2"), "cuMemAlloc_v2");
        assert_eq!(
            declared_name("cuMemcpyHtoDAsync_v2_ptsz"),
            "cuMemcpyHtoDAsync_v2"
        );
        assert_eq!(declared_name("cudaFree"), "cudaFree");
    }

    #[test]
    fn a_launch_a_sync_and_unknown_calls() {
        let launch = sys::cuLaunchKernel_params {
            f: 0x100 as sys::CUfunction,
            gridDimX: 4,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: 32,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: 16,
            hStream: 0x200 as sys::CUstream,
            kernelParams: std::ptr::null_mut(),
            extra: std::ptr::null_mut(),
        };
        let args = unsafe { call_args("cuLaunchKernel_ptsz", block(&launch)) }.unwrap();
        assert_eq!(args.as_slice(), [0x100, 4, 1, 1, 32, 1, 1, 16, 0x200]);
        let sync = sys::cuStreamSynchronize_params {
            hStream: 0x300 as sys::CUstream,
        };
        let args = unsafe { call_args("cuStreamSynchronize", block(&sync)) }.unwrap();
        assert_eq!(args.as_slice(), [0x300]);
        let event = TwoHandles {
            first: 0x400 as Ptr,
            second: std::ptr::null(),
        };
        let args = unsafe { call_args("cudaEventSynchronize", block(&event)) }.unwrap();
        assert_eq!(args.as_slice(), [0x400]);
        assert!(unsafe { call_args("cuCtxSynchronize", block(&sync)) }.is_none());
        assert!(unsafe { call_args("cudaFree", std::ptr::null()) }.is_none());
    }
}
