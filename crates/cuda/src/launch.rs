//! Launches as the backend re-issues them: borrowed from the launch's callback (its parameter
//! block is valid until the callback returns), or owned copies kept for a replay window, which
//! re-executes launches after their callbacks returned, possibly on another thread.

use crate::drv;
use crate::error::CudaError;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUcontext, CUfunction, CUstream};
use std::ffi::c_void;

/// How a launch API is re-issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchApi {
    /// `cuLaunchKernel` (and `_ptsz`): `cuLaunchKernel_params`.
    Kernel { per_thread: bool },
    /// `cuLaunchKernelEx` (and `_ptsz`): `cuLaunchKernelEx_params`.
    KernelEx { per_thread: bool },
    /// `cuLaunchCooperativeKernel` (and `_ptsz`): `cuLaunchCooperativeKernel_params`.
    Cooperative { per_thread: bool },
    /// `cuGraphLaunch` (and `_ptsz`): `cuGraphLaunch_params`, run node by node or once.
    Graph { per_thread: bool },
    /// `cuLaunchCooperativeKernelMultiDevice`: runs once.
    MultiDevice,
}

/// A launch the backend can execute again.
pub enum CudaLaunch {
    /// The application's own launch, inside its callback.
    Callback {
        api: LaunchApi,
        /// `cuLaunchKernel_params`, `cuLaunchKernelEx_params` or
        /// `cuLaunchCooperativeKernel_params`.
        params: *const c_void,
    },
    /// A copy that outlives the callback.
    Owned(Box<OwnedLaunch>),
}

// SAFETY: a `Callback` launch is only used on the thread whose callback produced it (the engine
// relaunches it inside that callback); an `Owned` launch owns its parameter bytes, and CUDA
// handles are valid on any thread.
unsafe impl Send for CudaLaunch {}

impl CudaLaunch {
    pub fn callback(api: LaunchApi, params: *const c_void) -> Self {
        CudaLaunch::Callback { api, params }
    }
}

/// Everything a launch needs, copied: function, shape, stream, the bytes of every kernel
/// parameter, and (for `cuLaunchKernelEx`) its launch attributes.
#[derive(Clone)]
pub struct OwnedLaunch {
    pub api: LaunchApi,
    pub ctx: CUcontext,
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    stream: CUstream,
    /// Parameter bytes, 16-byte aligned slots.
    storage: Vec<u128>,
    offsets: Vec<usize>,
    attrs: Vec<sys::CUlaunchAttribute>,
}

/// The byte layout of a kernel's parameters: (offset, size) of each, from the driver.
pub fn parameter_layout(driver: &Driver, f: CUfunction) -> Vec<(usize, usize)> {
    let mut layout = Vec::new();
    for index in 0..4096usize {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: writes two sizes; an index past the last parameter (or a handle of the other
        // kind) is an error code.
        let found = unsafe {
            drv!(driver, cuFuncGetParamInfo(f, index, &mut offset, &mut size)).is_ok()
                || drv!(
                    driver,
                    cuKernelGetParamInfo(f as sys::CUkernel, index, &mut offset, &mut size)
                )
                .is_ok()
        };
        if !found {
            break;
        }
        layout.push((offset, size));
    }
    layout
}

/// Copies `sizes.len()` parameters from a `kernelParams` array into 16-byte aligned slots.
/// Returns the storage and each parameter's byte offset in it.
///
/// # Safety
/// `kernel_params` points at `sizes.len()` pointers, each to at least `sizes[i]` bytes.
pub unsafe fn copy_parameters(
    kernel_params: *const *mut c_void,
    sizes: &[usize],
) -> (Vec<u128>, Vec<usize>) {
    let slots: usize = sizes.iter().map(|s| s.div_ceil(16).max(1)).sum();
    let mut storage = vec![0u128; slots];
    let mut offsets = Vec::with_capacity(sizes.len());
    let base = storage.as_mut_ptr() as *mut u8;
    let mut offset = 0usize;
    for (index, size) in sizes.iter().enumerate() {
        let source = *kernel_params.add(index) as *const u8;
        std::ptr::copy_nonoverlapping(source, base.add(offset), *size);
        offsets.push(offset);
        offset += size.div_ceil(16).max(1) * 16;
    }
    (storage, offsets)
}

/// A launch API's parameter block, decoded once: what the tool reads of a launch in its
/// callback. Graph launches carry their stream only; multi-device launches nothing.
#[derive(Debug, Clone, Copy)]
pub struct LaunchParams {
    pub f: CUfunction,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
    /// As passed: the legacy default stream is null (see `resolve_stream` in the backend).
    pub stream: CUstream,
    pub kernel_params: *mut *mut c_void,
    pub extra: *mut *mut c_void,
    /// `cuLaunchKernelEx`'s configuration (its attributes); null for the other APIs.
    pub config: *const sys::CUlaunchConfig,
}

impl LaunchParams {
    /// # Safety
    /// `params` is the parameter block of a launch through `api` (CUPTI's `functionParams`),
    /// read inside its callback; a `cuLaunchKernelEx` block points at a valid configuration.
    pub unsafe fn decode(api: LaunchApi, params: *const c_void) -> LaunchParams {
        let none = LaunchParams {
            f: std::ptr::null_mut(),
            grid: [0; 3],
            block: [0; 3],
            shared: 0,
            stream: std::ptr::null_mut(),
            kernel_params: std::ptr::null_mut(),
            extra: std::ptr::null_mut(),
            config: std::ptr::null(),
        };
        match api {
            LaunchApi::Kernel { .. } => {
                let p = &*(params as *const sys::cuLaunchKernel_params);
                LaunchParams {
                    f: p.f,
                    grid: [p.gridDimX, p.gridDimY, p.gridDimZ],
                    block: [p.blockDimX, p.blockDimY, p.blockDimZ],
                    shared: p.sharedMemBytes,
                    stream: p.hStream,
                    kernel_params: p.kernelParams,
                    extra: p.extra,
                    config: std::ptr::null(),
                }
            }
            LaunchApi::Cooperative { .. } => {
                let p = &*(params as *const sys::cuLaunchCooperativeKernel_params);
                LaunchParams {
                    f: p.f,
                    grid: [p.gridDimX, p.gridDimY, p.gridDimZ],
                    block: [p.blockDimX, p.blockDimY, p.blockDimZ],
                    shared: p.sharedMemBytes,
                    stream: p.hStream,
                    kernel_params: p.kernelParams,
                    extra: std::ptr::null_mut(),
                    config: std::ptr::null(),
                }
            }
            LaunchApi::KernelEx { .. } => {
                let p = &*(params as *const sys::cuLaunchKernelEx_params);
                let c = &*p.config;
                LaunchParams {
                    f: p.f,
                    grid: [c.gridDimX, c.gridDimY, c.gridDimZ],
                    block: [c.blockDimX, c.blockDimY, c.blockDimZ],
                    shared: c.sharedMemBytes,
                    stream: c.hStream,
                    kernel_params: p.kernelParams,
                    extra: p.extra,
                    config: p.config,
                }
            }
            LaunchApi::Graph { .. } => LaunchParams {
                stream: (*(params as *const sys::cuGraphLaunch_params)).hStream,
                ..none
            },
            LaunchApi::MultiDevice => none,
        }
    }

    /// `cuLaunchKernelEx`'s launch attributes (empty for the other APIs).
    ///
    /// # Safety
    /// As [`LaunchParams::decode`], still inside the callback.
    pub unsafe fn attributes(&self) -> Vec<sys::CUlaunchAttribute> {
        match self.config.as_ref() {
            Some(c) if !c.attrs.is_null() && c.numAttrs > 0 => {
                std::slice::from_raw_parts(c.attrs, c.numAttrs as usize).to_vec()
            }
            _ => Vec::new(),
        }
    }

    /// Issues this launch again through `api` on `stream`, with `attrs` as `cuLaunchKernelEx`'s
    /// launch attributes.
    ///
    /// # Safety
    /// The function, the parameter pointers and the attributes are valid for the call (the
    /// driver copies the parameters at launch).
    pub unsafe fn launch(
        &self,
        driver: &Driver,
        api: LaunchApi,
        stream: CUstream,
        attrs: &[sys::CUlaunchAttribute],
    ) -> Result<(), CudaError> {
        let [gx, gy, gz] = self.grid;
        let [bx, by, bz] = self.block;
        let (f, shared, params, extra) = (self.f, self.shared, self.kernel_params, self.extra);
        match api {
            LaunchApi::Kernel { .. } => drv!(
                driver,
                cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra)
            ),
            LaunchApi::Cooperative { .. } => drv!(
                driver,
                cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shared, stream, params)
            ),
            LaunchApi::KernelEx { .. } => {
                let config = sys::CUlaunchConfig {
                    gridDimX: gx,
                    gridDimY: gy,
                    gridDimZ: gz,
                    blockDimX: bx,
                    blockDimY: by,
                    blockDimZ: bz,
                    sharedMemBytes: shared,
                    hStream: stream,
                    attrs: if attrs.is_empty() {
                        std::ptr::null_mut()
                    } else {
                        attrs.as_ptr() as *mut sys::CUlaunchAttribute
                    },
                    numAttrs: attrs.len() as u32,
                };
                drv!(driver, cuLaunchKernelEx(&config, f, params, extra))
            }
            LaunchApi::Graph { .. } | LaunchApi::MultiDevice => Err(CudaError::Load(
                "graph and multi-device launches are never replayed".into(),
            )),
        }
    }
}

impl OwnedLaunch {
    /// Copies a launch inside its callback. Launches passing parameters through `extra` (a
    /// packed buffer whose layout the driver does not describe) cannot be kept.
    ///
    /// # Safety
    /// `params` is the launch API's parameter block, inside its callback.
    pub unsafe fn copy(
        driver: &Driver,
        ctx: CUcontext,
        api: LaunchApi,
        params: *const c_void,
        stream: CUstream,
    ) -> Result<OwnedLaunch, CudaError> {
        if matches!(api, LaunchApi::Graph { .. } | LaunchApi::MultiDevice) {
            return Err(CudaError::Load(
                "graph and multi-device launches are never replayed".into(),
            ));
        }
        let decoded = LaunchParams::decode(api, params);
        let attrs = decoded.attributes();
        if !decoded.extra.is_null() {
            return Err(CudaError::Load(
                "a launch passing its parameters through `extra` cannot be kept for a replay window".into(),
            ));
        }
        let shape = LaunchParams { stream, ..decoded };
        OwnedLaunch::from_parts(driver, ctx, api, &shape, attrs)
    }

    /// Copies the launch `shape` describes (function, grid, block, shared memory, stream and
    /// `kernelParams`; `extra` is not read) to be issued through `api` with `attrs`.
    ///
    /// # Safety
    /// `shape.kernel_params` points at one pointer per parameter of `shape.f`, each to that
    /// parameter's bytes.
    pub unsafe fn from_parts(
        driver: &Driver,
        ctx: CUcontext,
        api: LaunchApi,
        shape: &LaunchParams,
        attrs: Vec<sys::CUlaunchAttribute>,
    ) -> Result<OwnedLaunch, CudaError> {
        let layout = parameter_layout(driver, shape.f);
        if !layout.is_empty() && shape.kernel_params.is_null() {
            return Err(CudaError::Load(
                "a launch without its kernel parameters".into(),
            ));
        }
        let sizes: Vec<usize> = layout.iter().map(|(_, size)| *size).collect();
        let (storage, offsets) = copy_parameters(shape.kernel_params, &sizes);
        Ok(OwnedLaunch {
            api,
            ctx,
            f: shape.f,
            grid: shape.grid,
            block: shape.block,
            shared: shape.shared,
            stream: shape.stream,
            storage,
            offsets,
            attrs,
        })
    }

    /// The launch attributes it is issued with.
    pub fn attributes(&self) -> &[sys::CUlaunchAttribute] {
        &self.attrs
    }

    /// The kernel launched.
    pub fn function(&self) -> CUfunction {
        self.f
    }

    /// Grid, block and dynamic shared memory bytes.
    pub fn shape(&self) -> ([u32; 3], [u32; 3], u32) {
        (self.grid, self.block, self.shared)
    }

    /// The same launch, issued on `stream`.
    pub fn with_stream(&self, stream: CUstream) -> OwnedLaunch {
        OwnedLaunch {
            stream,
            ..self.clone()
        }
    }

    pub fn stream(&self) -> CUstream {
        self.stream
    }

    /// Values of the parameters that may be addresses: every 8-byte-aligned 8-byte word of a
    /// parameter of 8 bytes or more.
    pub fn addresses(&self) -> Vec<u64> {
        let base = self.storage.as_ptr() as *const u8;
        let sizes: Vec<usize> = self
            .offsets
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let next = self
                    .offsets
                    .get(i + 1)
                    .copied()
                    .unwrap_or(self.storage.len() * 16);
                next - o
            })
            .collect();
        let mut words = Vec::new();
        for (offset, size) in self.offsets.iter().zip(sizes) {
            for at in (0..size.saturating_sub(7)).step_by(8) {
                // SAFETY: inside `storage` (16-byte slots cover every parameter).
                let word = unsafe { std::ptr::read_unaligned(base.add(offset + at) as *const u64) };
                if word != 0 {
                    words.push(word);
                }
            }
        }
        words
    }

    /// Issues the launch again with the copied parameters, on `stream` (a replay runs every
    /// re-execution on the tool's own stream, in the order the application issued them).
    pub fn launch_on(&self, driver: &Driver, stream: CUstream) -> Result<(), CudaError> {
        OwnedLaunch {
            stream,
            attrs: self.attrs.clone(),
            storage: self.storage.clone(),
            offsets: self.offsets.clone(),
            ..*self
        }
        .launch(driver)
    }

    /// Issues the launch again with the copied parameters.
    pub fn launch(&self, driver: &Driver) -> Result<(), CudaError> {
        // The driver only reads through these pointers (it copies parameters at launch).
        let base = self.storage.as_ptr() as *mut u8;
        // SAFETY: offsets lie inside `storage`, which lives until the call returns (the
        // driver copies parameters at launch).
        let mut pointers: Vec<*mut c_void> = self
            .offsets
            .iter()
            .map(|o| unsafe { base.add(*o) } as *mut c_void)
            .collect();
        let params = if pointers.is_empty() {
            std::ptr::null_mut()
        } else {
            pointers.as_mut_ptr()
        };
        let decoded = LaunchParams {
            f: self.f,
            grid: self.grid,
            block: self.block,
            shared: self.shared,
            stream: self.stream,
            kernel_params: params,
            extra: std::ptr::null_mut(),
            config: std::ptr::null(),
        };
        // SAFETY: handles and shape as the application launched them; the parameter pointers
        // point into `storage`, alive until the call returns.
        unsafe { decoded.launch(driver, self.api, self.stream, &self.attrs) }
    }
}

/// Values of a launch's parameters that may be addresses (see [`OwnedLaunch::addresses`]),
/// read inside its callback.
///
/// # Safety
/// `params` is the launch API's parameter block, inside its callback.
pub unsafe fn callback_addresses(
    driver: &Driver,
    api: LaunchApi,
    params: *const c_void,
) -> Vec<u64> {
    let LaunchParams {
        f, kernel_params, ..
    } = LaunchParams::decode(api, params);
    if kernel_params.is_null() {
        return Vec::new();
    }
    let mut words = Vec::new();
    for (index, (_, size)) in parameter_layout(driver, f).into_iter().enumerate() {
        let source = *kernel_params.add(index) as *const u8;
        if source.is_null() {
            continue;
        }
        for at in (0..size.saturating_sub(7)).step_by(8) {
            let word = std::ptr::read_unaligned(source.add(at) as *const u64);
            if word != 0 {
                words.push(word);
            }
        }
    }
    words
}

/// Whether kernels on `device` reach ordinary (pageable) host memory directly
/// (`CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`: HMM or ATS). `false` when the driver cannot say.
pub fn pageable_memory_access(driver: &Driver, device: sys::CUdevice) -> bool {
    let mut value: i32 = 0;
    // SAFETY: writes one integer for a device ordinal.
    let known = unsafe {
        drv!(
            driver,
            cuDeviceGetAttribute(
                &mut value,
                sys::CUdevice_attribute_enum_CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
                device
            )
        )
    };
    known.is_ok() && value != 0
}

/// The first of `words` (a launch's parameter words, see [`callback_addresses`]) that is an
/// address of ordinary host memory: not `tracked` by the tool, in this process's mapped memory
/// (`mincore`), and unknown to CUDA (`cuPointerGetAttribute` fails: not an allocation, a
/// registration or a mapping of CUDA's). Cheap words first: a value outside the user address
/// range is never asked about.
pub fn pageable_host_word(
    driver: &Driver,
    words: &[u64],
    tracked: impl Fn(u64) -> bool,
) -> Option<u64> {
    words.iter().copied().find(|&word| {
        user_address(word) && !tracked(word) && mapped(word) && !cuda_knows(driver, word)
    })
}

/// Inside the range a user-space pointer of this process can take (x86-64 and aarch64 with
/// 48-bit addresses; the lowest pages are never mapped).
fn user_address(word: u64) -> bool {
    (0x1_0000..0x0000_8000_0000_0000).contains(&word)
}

fn mapped(address: u64) -> bool {
    static PAGE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    let page = *PAGE.get_or_init(|| match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as u64,
        _ => 4096,
    });
    let mut residency = [0u8; 1];
    // SAFETY: asks the kernel about one page; writes one byte into `residency`. An unmapped
    // page is answered with ENOMEM, never a fault.
    unsafe {
        libc::mincore(
            (address & !(page - 1)) as *mut c_void,
            1,
            residency.as_mut_ptr(),
        ) == 0
    }
}

fn cuda_knows(driver: &Driver, address: u64) -> bool {
    let mut memory_type: u32 = 0;
    // SAFETY: writes one integer; any address may be asked about.
    unsafe {
        drv!(
            driver,
            cuPointerGetAttribute(
                &mut memory_type as *mut u32 as *mut c_void,
                sys::CUpointer_attribute_enum_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                address
            )
        )
    }
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_launch_api_decodes_to_the_same_fields() {
        let f = 0x10 as CUfunction;
        let stream = 0x20 as CUstream;
        let mut slots = [std::ptr::null_mut::<c_void>(); 2];
        let kernel_params = slots.as_mut_ptr();
        let mut extra_slots = [std::ptr::null_mut::<c_void>(); 1];
        let extra = extra_slots.as_mut_ptr();
        let expect = |p: LaunchParams, extra_seen: *mut *mut c_void| {
            assert_eq!(p.f, f);
            assert_eq!((p.grid, p.block, p.shared), ([1, 2, 3], [4, 5, 6], 7));
            assert_eq!(p.stream, stream);
            assert_eq!(p.kernel_params, kernel_params);
            assert_eq!(p.extra, extra_seen);
        };
        let kernel = sys::cuLaunchKernel_params {
            f,
            gridDimX: 1,
            gridDimY: 2,
            gridDimZ: 3,
            blockDimX: 4,
            blockDimY: 5,
            blockDimZ: 6,
            sharedMemBytes: 7,
            hStream: stream,
            kernelParams: kernel_params,
            extra,
        };
        let cooperative = sys::cuLaunchCooperativeKernel_params {
            f,
            gridDimX: 1,
            gridDimY: 2,
            gridDimZ: 3,
            blockDimX: 4,
            blockDimY: 5,
            blockDimZ: 6,
            sharedMemBytes: 7,
            hStream: stream,
            kernelParams: kernel_params,
        };
        let mut attribute = sys::CUlaunchAttribute {
            id: 4,
            ..Default::default()
        };
        let config = sys::CUlaunchConfig {
            gridDimX: 1,
            gridDimY: 2,
            gridDimZ: 3,
            blockDimX: 4,
            blockDimY: 5,
            blockDimZ: 6,
            sharedMemBytes: 7,
            hStream: stream,
            attrs: &mut attribute,
            numAttrs: 1,
        };
        let ex = sys::cuLaunchKernelEx_params {
            config: &config,
            f,
            kernelParams: kernel_params,
            extra,
        };
        let graph = sys::cuGraphLaunch_params {
            hGraph: std::ptr::null_mut(),
            hStream: stream,
        };
        // SAFETY: each block is the parameter struct of its API, alive for the calls.
        unsafe {
            let plain = LaunchApi::Kernel { per_thread: false };
            expect(
                LaunchParams::decode(plain, &kernel as *const _ as *const c_void),
                extra,
            );
            assert!(
                LaunchParams::decode(plain, &kernel as *const _ as *const c_void)
                    .attributes()
                    .is_empty()
            );
            let coop = LaunchApi::Cooperative { per_thread: true };
            expect(
                LaunchParams::decode(coop, &cooperative as *const _ as *const c_void),
                std::ptr::null_mut(),
            );
            let decoded = LaunchParams::decode(
                LaunchApi::KernelEx { per_thread: false },
                &ex as *const _ as *const c_void,
            );
            expect(decoded, extra);
            let attributes = decoded.attributes();
            assert_eq!(attributes.len(), 1);
            assert_eq!(attributes[0].id, 4);
            let g = LaunchParams::decode(
                LaunchApi::Graph { per_thread: false },
                &graph as *const _ as *const c_void,
            );
            assert_eq!((g.stream, g.f), (stream, std::ptr::null_mut()));
            let m = LaunchParams::decode(LaunchApi::MultiDevice, std::ptr::null());
            assert!(m.f.is_null() && m.stream.is_null() && m.kernel_params.is_null());
        }
    }

    #[test]
    fn only_mapped_user_addresses_can_be_host_memory() {
        let on_heap = Box::new(7u64);
        let heap = &*on_heap as *const u64 as u64;
        assert!(user_address(heap) && mapped(heap));
        assert!(!user_address(0x400) && !user_address(u64::MAX));
        // A page mapped, then unmapped: its address is unmapped afterwards, unless another test's
        // thread had a page mapped there meanwhile; so a few tries, of which one must say so.
        let unmapped_seen = (0..8).any(|_| {
            // SAFETY: maps one fresh page, then unmaps it.
            let gone = unsafe {
                let page = libc::mmap(
                    std::ptr::null_mut(),
                    4096,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                assert_ne!(page, libc::MAP_FAILED);
                assert!(mapped(page as u64));
                libc::munmap(page, 4096);
                page as u64
            };
            !mapped(gone)
        });
        assert!(unmapped_seen);
    }

    #[test]
    fn parameters_are_copied_into_aligned_slots() {
        let mut a: u64 = 0x1122_3344_5566_7788;
        let mut b: u32 = 7;
        let mut c = [
            1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
        ];
        let params: [*mut c_void; 3] = [
            &mut a as *mut _ as *mut c_void,
            &mut b as *mut _ as *mut c_void,
            c.as_mut_ptr() as *mut c_void,
        ];
        // SAFETY: three pointers to values of the stated sizes.
        let (storage, offsets) = unsafe { copy_parameters(params.as_ptr(), &[8, 4, 20]) };
        assert_eq!(offsets, vec![0, 16, 32]);
        let bytes: Vec<u8> = storage.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(&bytes[0..8], &a.to_le_bytes());
        assert_eq!(&bytes[16..20], &b.to_le_bytes());
        assert_eq!(&bytes[32..52], &c);
        // Changing the originals afterwards does not change the copy.
        a = 0;
        assert_ne!(&bytes[0..8], &a.to_le_bytes());
    }
}
