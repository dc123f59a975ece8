//! kreplay-demo: a CUDA workload that needs no compiler. It loads two kernels from embedded PTX
//! through the driver API, runs them a few times on in-place buffers (and a `__device__`
//! counter that every `scale_add` launch increments), then checks every element against the
//! same arithmetic done on the host. Under `kreplay --replay-mode kernel` each dispatch runs
//! once per counter group; the results must still be exactly those of one execution.
//!
//! Exit status: 0 when everything matches, 1 on a mismatch, 2 when CUDA is unusable.

use kreplay_cuda::drv;
use kreplay_cuda::error::CudaError;
use kreplay_cuda::loader;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUdeviceptr, CUfunction};
use std::ffi::{c_void, CString};
use std::process::ExitCode;

const PTX: &str = include_str!("demo.ptx");
const ELEMENTS: usize = 1 << 20;
const ITERATIONS: u32 = 3;
const BLOCK: u32 = 256;

fn main() -> ExitCode {
    let driver = match loader::driver() {
        Ok(driver) => driver,
        Err(e) => {
            eprintln!("kreplay-demo: {e}");
            return ExitCode::from(2);
        }
    };
    match run(driver) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("kreplay-demo: {e}");
            ExitCode::from(2)
        }
    }
}

struct Buffers {
    y: CUdeviceptr,
    x: CUdeviceptr,
    acc: CUdeviceptr,
}

fn run(d: &'static Driver) -> Result<bool, CudaError> {
    let bytes = ELEMENTS * std::mem::size_of::<f32>();
    let x_host: Vec<f32> = (0..ELEMENTS).map(|i| 1.0 + (i % 3) as f32).collect();
    let mut y_host: Vec<f32> = (0..ELEMENTS).map(|i| (i % 7) as f32 * 0.25).collect();
    let mut acc_host = vec![0.0f32; ELEMENTS];
    let ptx = CString::new(PTX).expect("PTX has no NUL");
    let (mut ctx, mut module) = (std::ptr::null_mut(), std::ptr::null_mut());
    let (mut scale_add, mut accumulate): (CUfunction, CUfunction) =
        (std::ptr::null_mut(), std::ptr::null_mut());
    let mut buffers = Buffers { y: 0, x: 0, acc: 0 };
    let (mut counter, mut counter_bytes): (CUdeviceptr, usize) = (0, 0);
    // SAFETY: plain driver API use with handles and buffers owned by this function.
    unsafe {
        drv!(d, cuInit(0))?;
        let mut device: sys::CUdevice = 0;
        drv!(d, cuDeviceGet(&mut device, 0))?;
        drv!(d, cuDevicePrimaryCtxRetain(&mut ctx, device))?;
        drv!(d, cuCtxSetCurrent(ctx))?;
        drv!(
            d,
            cuModuleLoadData(&mut module, ptx.as_ptr() as *const c_void)
        )?;
        drv!(
            d,
            cuModuleGetFunction(&mut scale_add, module, c"scale_add".as_ptr())
        )?;
        drv!(
            d,
            cuModuleGetFunction(&mut accumulate, module, c"accumulate".as_ptr())
        )?;
        drv!(
            d,
            cuModuleGetGlobal_v2(
                &mut counter,
                &mut counter_bytes,
                module,
                c"launches".as_ptr()
            )
        )?;
        for ptr in [&mut buffers.y, &mut buffers.x, &mut buffers.acc] {
            drv!(d, cuMemAlloc_v2(ptr, bytes))?;
        }
        drv!(
            d,
            cuMemcpyHtoD_v2(buffers.y, y_host.as_ptr() as *const c_void, bytes)
        )?;
        drv!(
            d,
            cuMemcpyHtoD_v2(buffers.x, x_host.as_ptr() as *const c_void, bytes)
        )?;
        drv!(d, cuMemsetD8_v2(buffers.acc, 0, bytes))?;
        drv!(d, cuMemsetD8_v2(counter, 0, counter_bytes))?;

        let grid = (ELEMENTS as u32).div_ceil(BLOCK);
        let mut n = ELEMENTS as u32;
        for _ in 0..ITERATIONS {
            let mut args: [*mut c_void; 3] = [
                &mut buffers.y as *mut _ as *mut c_void,
                &mut buffers.x as *mut _ as *mut c_void,
                &mut n as *mut _ as *mut c_void,
            ];
            launch(d, scale_add, grid, &mut args)?;
            let mut args: [*mut c_void; 3] = [
                &mut buffers.acc as *mut _ as *mut c_void,
                &mut buffers.y as *mut _ as *mut c_void,
                &mut n as *mut _ as *mut c_void,
            ];
            launch(d, accumulate, grid, &mut args)?;
        }
        drv!(d, cuCtxSynchronize())?;
    }

    // The same arithmetic on the host (fma.rn.f32 is what f32::mul_add computes).
    for _ in 0..ITERATIONS {
        for i in 0..ELEMENTS {
            y_host[i] = y_host[i].mul_add(2.0, x_host[i]);
            acc_host[i] = y_host[i].mul_add(0.5, acc_host[i]);
        }
    }
    let (y_device, acc_device, launches) = read_back(d, &buffers, counter)?;
    let bad_y = mismatches(&y_device, &y_host);
    let bad_acc = mismatches(&acc_device, &acc_host);
    let ok = bad_y == 0 && bad_acc == 0 && launches == ITERATIONS;
    println!(
        "kreplay-demo: {} — {} scale_add + {} accumulate launches on {ELEMENTS} floats; y mismatches {bad_y}, acc mismatches {bad_acc}, __device__ launches counter {launches} (expected {ITERATIONS})",
        if ok { "verification PASSED (results equal one execution)" } else { "verification FAILED" },
        ITERATIONS,
        ITERATIONS,
    );
    Ok(ok)
}

/// Launches `f` on `grid` blocks of [`BLOCK`] threads on the default stream.
///
/// # Safety
/// `args` point at live values of `f`'s parameter types.
unsafe fn launch(
    d: &Driver,
    f: CUfunction,
    grid: u32,
    args: &mut [*mut c_void],
) -> Result<(), CudaError> {
    // SAFETY: as the caller promises.
    unsafe {
        drv!(
            d,
            cuLaunchKernel(
                f,
                grid,
                1,
                1,
                BLOCK,
                1,
                1,
                0,
                std::ptr::null_mut(),
                args.as_mut_ptr(),
                std::ptr::null_mut()
            )
        )
    }
}

/// The results (y, acc and the `__device__` launch counter), copied back; the buffers freed.
fn read_back(
    d: &Driver,
    buffers: &Buffers,
    counter: CUdeviceptr,
) -> Result<(Vec<f32>, Vec<f32>, u32), CudaError> {
    let bytes = ELEMENTS * std::mem::size_of::<f32>();
    let mut y = vec![0.0f32; ELEMENTS];
    let mut acc = vec![0.0f32; ELEMENTS];
    let mut launches: u32 = 0;
    // SAFETY: host buffers of the copied sizes; device buffers allocated by `run`.
    unsafe {
        drv!(
            d,
            cuMemcpyDtoH_v2(y.as_mut_ptr() as *mut c_void, buffers.y, bytes)
        )?;
        drv!(
            d,
            cuMemcpyDtoH_v2(acc.as_mut_ptr() as *mut c_void, buffers.acc, bytes)
        )?;
        drv!(
            d,
            cuMemcpyDtoH_v2(&mut launches as *mut u32 as *mut c_void, counter, 4)
        )?;
        for ptr in [buffers.y, buffers.x, buffers.acc] {
            drv!(d, cuMemFree_v2(ptr))?;
        }
    }
    Ok((y, acc, launches))
}

fn mismatches(device: &[f32], host: &[f32]) -> usize {
    device
        .iter()
        .zip(host)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count()
}
