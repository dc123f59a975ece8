//! `--cache-control all` on CUDA 13.0, whose CUPTI cannot flush caches (13.4's range profiler
//! can): before each measured launch, kernels of the tool's own leave the GPU's L2 holding
//! nothing of the application's and nothing dirty.
//!
//! How (each step measured on the H200: docs/DECISIONS.md, docs/kernel-replay.md):
//! - a buffer of 1.25 × L2 is read three times (one 32-bit word per 32-byte sector): that
//!   displaces a kernel's data that was hit in L2 and writes back what was dirty (so does one
//!   read sweep of 3 × L2). A memset or device-to-device copy of the buffer displaces it too but
//!   leaves L2 full of dirty lines, which the next kernel then writes back (3.9–15.6 MB of DRAM
//!   writes on a 16 MiB kernel that writes none); one sweep of 1.25 × L2 with evict-last loads
//!   or prefetches leaves part of the data;
//! - then every line of the buffer is discarded (`discard.global.L2`: invalidated, not written
//!   back), so that L2 is left empty rather than full of the flush's lines;
//! - by default ([`ApplicationContextFlusher`]) the sweeps and the discard are one kernel,
//!   launched cooperatively in the application's context on the launch's own stream: its
//!   blocks wait for each other after their sweeps and then each discards its share of the
//!   lines (on a device that cannot launch it cooperatively the block that finishes last discards them all, alone, which takes 277 µs more on the
//!   H200 and leaves the next kernel up to 110 KB of DRAM writes). Every kernel launched
//!   in the profiled context is a range of its range profiler, so the backend sizes the
//!   counters for one flush range beside each launch's and drops the flush's ranges. The next
//!   kernel's L2 membar sectors then equal ncu's (measured on every kernel of the probe);
//! - when the counters could not hold the flush's ranges, [`L2Flusher`] runs the kernels in a context of the tool's own on the same device;
//!   the launch's stream and the tool's stream wait for each other through events, which work
//!   across contexts. The switch back is seen in the next kernel's counters (≈ 2,400 more L2
//!   membar sectors, ≈ 240 more L2 active cycles than after ncu's flush).
//!
//! The switch also empties the SMs' and GPCs' constant and instruction caches, as ncu's flush
//! does; in the application's context the fused kernel does it itself: the first warp of each block streams 64 KiB of constants and 256 KiB of
//! straight-line code through them ([`module_ptx`] writes the code out). Without it a kernel
//! that repeats the one before finds its code there and reads ≈ 1,000 fewer L2 sectors than after
//! ncu's flush (docs/kernel-replay.md).
//!
//! Cost on the H200 (2026-12-03, docs/DECISIONS.md, without the profiler): the
//! fused kernel 215 µs per flush, of which the GPC-caches part 146 µs (with the last block's
//! discard 639 µs; the flush in the tool's own context 1.07 ms).

use kreplay_cuda::context::{ContextGuard, OwnedContext};
use kreplay_cuda::device::{Attribute, Device};
use kreplay_cuda::error::CudaError;
use kreplay_cuda::handles::{self, DeviceMemory, Event, Stream};
use kreplay_cuda::module::{link_ptx, Function, Module, Shape};
use kreplay_cuda::{CUcontext, CUdeviceptr, CUevent, CUstream, Driver};

/// The flush kernels' PTX (hand-written; the driver compiles it for the device), less the
/// GPC-caches code that [`module_ptx`] writes out into it.
const PTX: &str = include_str!("flush/l2_flush.ptx");

/// The lines of [`PTX`] between which [`module_ptx`] writes `kreplay_l2_flush`'s straight-line
/// constant loads.
const GPC_BEGIN: &str = "\t// GPC caches: begin\n";
const GPC_END: &str = "\t// GPC caches: end\n";
/// Constant loads `kreplay_l2_flush` runs in each block's first warp: one 32-bit word each of
/// its 64 KiB of constants, one instruction each once compiled (16 bytes on sm_90), so 256 KiB
/// of code and 64 KiB of constants pass through the SM's and the GPC's caches.
const GPC_LOADS: usize = 16384;

/// Device memory a context of the tool's own takes (measured on the H200 with CUDA 13.0: 524 MiB;
/// docs/DECISIONS.md), rounded up.
const CONTEXT_BYTES: u64 = 544 << 20;

/// Times the buffer is read before its lines are discarded.
const SWEEPS: usize = 3;
/// Threads per block of the flush kernels; blocks: this many per SM.
const BLOCK: u32 = 512;
const BLOCKS_PER_SM: u32 = 8;

/// The tool's context, kernels and buffer that flush one device's L2. Dropping it destroys its
/// context, and with it everything made in it: the backend drops one that flushed only in a
/// launch's callback (a flusher given up after a failed flush waits there for the next
/// dispatch); one that failed to be made is dropped where it was being made.
pub struct L2Flusher {
    /// The tool's own context; its stream, event, module and buffer go with it.
    ctx: OwnedContext,
    stream: CUstream,
    /// Recorded on the tool's stream after the flush; the launch's stream waits for it.
    done: CUevent,
    kernels: Kernels,
}

// SAFETY: CUDA handles, valid on any thread of the process.
unsafe impl Send for L2Flusher {}

/// The flush buffer for an L2 of `l2` bytes: 1.25 × L2, whole 128-byte lines.
fn buffer_bytes(l2: i32) -> u64 {
    (u64::try_from(l2).unwrap_or(0) * 5 / 4).div_ceil(128) * 128
}

/// Device `ordinal`'s handle, the flush buffer's bytes for its L2 and the flush kernels' blocks.
fn geometry(d: &Driver, ordinal: u32) -> Result<(Device, u64, u32), CudaError> {
    let device = Device::get(d, ordinal)?;
    let l2 = device.attribute(d, Attribute::L2CacheBytes)?;
    let sms = device.attribute(d, Attribute::MultiprocessorCount)?;
    let bytes = buffer_bytes(l2);
    if bytes == 0 {
        return Err(CudaError::Load(format!(
            "device {ordinal} reports no L2 cache"
        )));
    }
    let blocks = u32::try_from(sms.max(1)).unwrap_or(1) * BLOCKS_PER_SM;
    Ok((device, bytes, blocks))
}

impl L2Flusher {
    /// The device memory a flusher on `ordinal` takes: its context and its buffer.
    pub fn device_bytes(d: &Driver, ordinal: u32) -> u64 {
        CONTEXT_BYTES + ApplicationContextFlusher::device_bytes(d, ordinal)
    }

    /// Creates the tool's context on `device` (the CUDA device ordinal), loads the kernels and
    /// allocates the buffer. The calling thread's current context is left as it was.
    pub fn new(d: &'static Driver, ordinal: u32) -> Result<L2Flusher, CudaError> {
        let (device, bytes, blocks) = geometry(d, ordinal)?;
        // Current on this thread until popped below.
        let ctx = OwnedContext::create(d, device.raw())?;
        let built = Self::build(d, bytes, blocks);
        ctx.pop();
        // Should the build have failed, dropping the context destroys what was made in it.
        let (stream, done, kernels) = built?;
        Ok(L2Flusher {
            ctx,
            stream,
            done,
            kernels,
        })
    }

    /// The kernels, stream, event and zeroed buffer, in the tool's context (current), each
    /// left to go with that context.
    fn build(
        d: &'static Driver,
        bytes: u64,
        blocks: u32,
    ) -> Result<(CUstream, CUevent, Kernels), CudaError> {
        let (module, functions) = load_kernels(d, false)?;
        module.leave_to_context();
        let buffer = DeviceMemory::allocate(d, bytes)?.leave_to_context();
        // SAFETY: the buffer just allocated in the current context.
        unsafe { handles::memset_d8(d, buffer, 0, bytes as usize)? };
        let stream = Stream::non_blocking(d)?.leave_to_context();
        let done = Event::untimed(d)?.leave_to_context();
        handles::synchronize_context(d)?;
        Ok((
            stream,
            done,
            Kernels {
                functions,
                buffer,
                bytes,
                blocks,
            },
        ))
    }

    /// Enqueues a flush before whatever `stream` (of the calling thread's current context)
    /// runs next. `ready` is an event of that context, recorded here.
    pub fn flush(
        &self,
        d: &'static Driver,
        stream: CUstream,
        ready: CUevent,
    ) -> Result<(), CudaError> {
        handles::record_event(d, ready, stream)?;
        {
            let _ctx = ContextGuard::make_current(d, self.ctx.raw())?;
            handles::wait_event(d, self.stream, ready)?;
            // SAFETY: the kernels' context is current, the stream is of it.
            unsafe { self.kernels.sweeps(d, self.stream)? };
            handles::record_event(d, self.done, self.stream)?;
        }
        handles::wait_event(d, stream, self.done)
    }

    /// The same flush ordered by the host instead of events across the two contexts: waits for
    /// `stream` (of the calling thread's current context) to drain, runs the flush in the
    /// tool's context and waits for it, so that the GPU switches contexts only between idle
    /// streams (`KREPLAY_HOST_ORDERED_FLUSH=1`, for comparing the two). An error of the
    /// application's earlier work reported by that wait is the application's, left for it to
    /// see, not a failed flush.
    pub fn flush_host_ordered(
        &self,
        d: &'static Driver,
        stream: CUstream,
    ) -> Result<(), CudaError> {
        let _ = handles::synchronize_stream(d, stream);
        let _ctx = ContextGuard::make_current(d, self.ctx.raw())?;
        // SAFETY: the kernels' context is current, the stream is of it.
        unsafe { self.kernels.sweeps(d, self.stream)? };
        handles::synchronize_stream(d, self.stream)
    }
}

/// [`PTX`] with `loads` straight-line constant loads between the GPC-caches markers, spread over
/// eight sums (independent, so that the loads issue back to back), cycling through the 64 KiB
/// of `kreplay_gpc_constants`. Without the markers, the file as it is.
fn module_ptx(loads: usize) -> std::ffi::CString {
    use std::fmt::Write as _;
    let text = match PTX
        .split_once(GPC_BEGIN)
        .and_then(|(head, rest)| rest.split_once(GPC_END).map(|(_, tail)| (head, tail)))
    {
        Some((head, tail)) => {
            let mut text = String::with_capacity(PTX.len() + loads * 90);
            text.push_str(head);
            text.push_str(GPC_BEGIN);
            for i in 0..loads {
                let sum = i % 8;
                let _ = write!(
                    text,
                    "\tld.const.u32 \t%k8, [kreplay_gpc_constants+{}];\n\tadd.s32 \t%k{sum}, %k{sum}, %k8;\n",
                    (i * 4) % 65536
                );
            }
            text.push_str(GPC_END);
            text.push_str(tail);
            text
        }
        None => PTX.to_owned(),
    };
    // The file holds no NUL; were it to, the empty module fails to load, and so the flush.
    std::ffi::CString::new(text).unwrap_or_default()
}

/// The module's PTX with the GPC-caches code written out, or without it; made once.
fn ptx(gpc_caches: bool) -> &'static std::ffi::CStr {
    static WITH_GPC: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();
    static WITHOUT_GPC: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();
    if gpc_caches {
        WITH_GPC.get_or_init(|| module_ptx(GPC_LOADS))
    } else {
        WITHOUT_GPC.get_or_init(|| module_ptx(0))
    }
}

/// The module with the GPC-caches code as the driver compiled it, by device ordinal: see
/// [`compile_ahead`].
static COMPILED: std::sync::Mutex<Vec<(Device, Vec<u8>)>> = std::sync::Mutex::new(Vec::new());

/// Compiles the fused flush's module, with its GPC-caches code, for the current context's
/// device and keeps the code for [`ApplicationContextFlusher::new`], once per device. Called
/// on a thread of the tool's (the counter set-up's) so that the driver's compilation of its
/// 16,384 straight-line loads (3.7 s on the H200 the first time, 10 ms once the driver's compute
/// cache holds it) overlaps what the application does before its first measured dispatch, which
/// waits for the set-up. Without it, `new` compiles the PTX itself.
pub fn compile_ahead(d: &Driver) -> Result<(), CudaError> {
    let device = Device::current(d)?;
    let done = |compiled: &Vec<(Device, Vec<u8>)>| compiled.iter().any(|(o, _)| *o == device);
    if COMPILED.lock().map(|c| done(&c)).unwrap_or(true) {
        return Ok(());
    }
    let code = link_ptx(d, ptx(true), c"kreplay_l2_flush")?;
    if let Ok(mut compiled) = COMPILED.lock() {
        if !done(&compiled) {
            compiled.push((device, code));
        }
    }
    Ok(())
}

/// The flush kernels' module, loaded in the current context; with `gpc_caches`, with the
/// GPC-caches code written out (only the fused kernel runs it: the flush in a context of the
/// tool's own loads the file as it is and spares the driver compiling 16,384 more instructions),
/// from the code [`compile_ahead`] made for the device where there is.
fn load_kernels(d: &'static Driver, gpc_caches: bool) -> Result<(Module, Functions), CudaError> {
    // A copy, so that the lock is not held while the driver loads (or compiles) the module.
    let compiled: Option<Vec<u8>> = if gpc_caches {
        let device = Device::current(d)?;
        COMPILED.lock().ok().and_then(|c| {
            c.iter()
                .find(|(o, _)| *o == device)
                .map(|(_, code)| code.clone())
        })
    } else {
        None
    };
    let image: *const std::ffi::c_void = compiled
        .as_ref()
        .map_or(ptx(gpc_caches).as_ptr().cast(), |code| code.as_ptr().cast());
    // SAFETY: the PTX text is NUL-terminated, the compiled code a whole cubin. Should a
    // function be missing, dropping the module unloads it.
    let module = unsafe { Module::load(d, image)? };
    let functions = Functions {
        touch: module.function(c"kreplay_l2_touch")?,
        discard: module.function(c"kreplay_l2_discard")?,
        whole: module.function(c"kreplay_l2_flush")?,
    };
    Ok((module, functions))
}

/// The flush kernels of the PTX module.
struct Functions {
    /// One read sweep (`kreplay_l2_touch`).
    touch: Function,
    /// The discard of every line (`kreplay_l2_discard`).
    discard: Function,
    /// The sweeps and the discard in one kernel (`kreplay_l2_flush`).
    whole: Function,
}

/// The flush kernels and their buffer, in one context.
struct Kernels {
    functions: Functions,
    buffer: CUdeviceptr,
    bytes: u64,
    blocks: u32,
}

impl Kernels {
    /// The read sweeps, then the discard of the buffer's lines, on `stream`, each a kernel.
    ///
    /// # Safety
    /// The kernels' context is current and `stream` is of it.
    unsafe fn sweeps(&self, d: &Driver, stream: CUstream) -> Result<(), CudaError> {
        let mut buffer = self.buffer;
        let mut bytes = self.bytes;
        let mut sink = self.buffer;
        let mut touch_args = [
            (&mut buffer as *mut CUdeviceptr).cast::<std::ffi::c_void>(),
            (&mut bytes as *mut u64).cast(),
            (&mut sink as *mut CUdeviceptr).cast(),
        ];
        for _ in 0..SWEEPS {
            // SAFETY: the kernels' parameters, alive for the launches.
            unsafe { self.launch(d, self.functions.touch, stream, &mut touch_args)? };
        }
        let mut discard_args = [touch_args[0], touch_args[1]];
        // SAFETY: as above.
        unsafe { self.launch(d, self.functions.discard, stream, &mut discard_args)? };
        Ok(())
    }

    /// The same flush as one kernel on `stream` (`kreplay_l2_flush`), its blocks' tickets
    /// counted at `counter` (two 32-bit words, zeroed or left by the flush before), the GPC
    /// caches emptied too; `cooperative`: on `blocks` blocks by a cooperative launch, every block
    /// resident at once, so that they can wait for each other and all discard (see the PTX).
    ///
    /// # Safety
    /// As for [`Self::sweeps`].
    unsafe fn whole(
        &self,
        d: &Driver,
        stream: CUstream,
        cooperative: Option<u32>,
        counter: CUdeviceptr,
    ) -> Result<(), CudaError> {
        let mut buffer = self.buffer;
        let mut bytes = self.bytes;
        let mut sweeps = SWEEPS as u32;
        let (mut discard, mut gpc) = fused_kernel_parameters(cooperative.is_some());
        let mut counter = counter;
        let mut args = [
            (&mut buffer as *mut CUdeviceptr).cast::<std::ffi::c_void>(),
            (&mut bytes as *mut u64).cast(),
            (&mut sweeps as *mut u32).cast(),
            (&mut discard as *mut u32).cast(),
            (&mut counter as *mut CUdeviceptr).cast(),
            (&mut gpc as *mut u32).cast(),
        ];
        match cooperative {
            // SAFETY: the kernel's parameters, alive for the launch.
            None => unsafe { self.launch(d, self.functions.whole, stream, &mut args) },
            // SAFETY: as above; `blocks` blocks of BLOCK threads fit the device at once.
            Some(blocks) => unsafe {
                self.functions.whole.launch_cooperative(
                    d,
                    Shape {
                        blocks,
                        threads: BLOCK,
                    },
                    stream,
                    &mut args,
                )
            },
        }
    }

    /// # Safety
    /// `args` point at live values of the kernel's parameter types; the kernels' context is
    /// current and `stream` is of it.
    unsafe fn launch(
        &self,
        d: &Driver,
        function: Function,
        stream: CUstream,
        args: &mut [*mut std::ffi::c_void],
    ) -> Result<(), CudaError> {
        // SAFETY: as the caller promises.
        unsafe { function.launch(d, self.shape(), stream, args) }
    }

    /// Every launch's shape but the cooperative one's.
    fn shape(&self) -> Shape {
        Shape {
            blocks: self.blocks,
            threads: BLOCK,
        }
    }
}

/// `kreplay_l2_flush`'s `flush_discard` and `flush_gpc` (the PTX says what each value does):
/// the GPC caches are emptied, and every block discards after the grid barrier only in a
/// cooperative launch, where all of them are resident at once; otherwise the last block
/// discards alone.
fn fused_kernel_parameters(cooperative: bool) -> (u32, u32) {
    (if cooperative { 2 } else { 1 }, 1)
}

/// The flush in the application's context ([`L2Flusher`] where the profiler's ranges cannot
/// hold it beside each launch's): the same sweeps and discard as one kernel, `kreplay_l2_flush`, launched on the
/// launch's own stream before it. The GPU then does not switch contexts around the flush, which
/// spares the next kernel the ≈ 2,400 L2 membar sectors and ≈ 240 L2 active cycles a switch
/// back costs it (docs/sections.md); the kernel is a range of the application's range profiler,
/// which the backend measures and drops ([`Self::RANGES`] per flush).
pub struct ApplicationContextFlusher {
    driver: &'static Driver,
    ctx: CUcontext,
    /// Unloaded when dropped, before the buffer is freed.
    _module: Module,
    kernels: Kernels,
    /// The kernel's ticket counter: the 32-bit word after the buffer.
    counter: CUdeviceptr,
    /// Whether the counter was zeroed (on the first flush's stream).
    counter_zeroed: std::sync::atomic::AtomicBool,
    /// The blocks of a cooperative launch of the kernel (as many as fit the device at once, up
    /// to [`BLOCKS_PER_SM`] per SM) where the device can launch one; 0 where it cannot, or
    /// after one failed.
    cooperative_blocks: std::sync::atomic::AtomicU32,
    /// Owns `kernels.buffer` and the counter.
    _buffer: kreplay_cuda::handles::DeviceMemory,
}

// SAFETY: CUDA handles, valid on any thread of the process.
unsafe impl Send for ApplicationContextFlusher {}

/// Bytes after the flush buffer for the ticket counter and the generation word after it: one
/// 128-byte line of their own.
const COUNTER_BYTES: u64 = 128;

impl ApplicationContextFlusher {
    /// The ranges of the profiler each flush makes: its one kernel.
    pub const RANGES: usize = 1;

    /// The device memory one takes on `ordinal`: its buffer and counter.
    pub fn device_bytes(d: &Driver, ordinal: u32) -> u64 {
        geometry(d, ordinal).map_or(0, |(_, bytes, _)| bytes + COUNTER_BYTES)
    }

    /// Loads the kernels and allocates the buffer in `ctx`, the application's context on
    /// device `ordinal` (current). The buffer is not zeroed: the sweeps' sums are never used
    /// unless they equal a magic value, and then only stored into the buffer itself.
    pub fn new(
        d: &'static Driver,
        ordinal: u32,
        ctx: CUcontext,
    ) -> Result<ApplicationContextFlusher, CudaError> {
        let (device, bytes, blocks) = geometry(d, ordinal)?;
        let buffer = DeviceMemory::allocate(d, bytes + COUNTER_BYTES)?;
        let (module, functions) = load_kernels(d, true)?;
        let cooperative_blocks = cooperative_blocks(d, device, functions.whole, blocks);
        kreplay_cuda::debug::line(&match cooperative_blocks {
            Some(n) => format!("the fused flush launches cooperatively on {n} blocks"),
            None => "the fused flush cannot launch cooperatively: its last block discards".into(),
        });
        Ok(ApplicationContextFlusher {
            driver: d,
            ctx,
            _module: module,
            kernels: Kernels {
                functions,
                buffer: buffer.address(),
                bytes,
                blocks,
            },
            counter: buffer.address() + bytes,
            counter_zeroed: std::sync::atomic::AtomicBool::new(false),
            cooperative_blocks: std::sync::atomic::AtomicU32::new(cooperative_blocks.unwrap_or(0)),
            _buffer: buffer,
        })
    }

    /// The application's context it is in.
    pub fn context(&self) -> CUcontext {
        self.ctx
    }

    /// Enqueues the flush on `stream`, of the flusher's context: the counter's zeroing first
    /// (an asynchronous memset, not a range), the first time; with the grid barrier where the
    /// device can launch the kernel cooperatively (once such a launch failed, the last block
    /// discards alone from then on). `launched` counts the kernels launched (each a range).
    pub(crate) fn flush(&self, stream: CUstream, launched: &mut usize) -> Result<(), CudaError> {
        use std::sync::atomic::Ordering;
        let d = self.driver;
        let _ctx = ContextGuard::make_current(d, self.ctx)?;
        // SAFETY: the flusher's kernels, buffer and counter, in its context, made current
        // above; `stream` is the launch's, of that context.
        unsafe {
            if !self.counter_zeroed.load(Ordering::Relaxed) {
                handles::memset_d32_async(d, self.counter, 0, 2, stream)?;
                self.counter_zeroed.store(true, Ordering::Relaxed);
            }
            let cooperative =
                Some(self.cooperative_blocks.load(Ordering::Relaxed)).filter(|&blocks| blocks > 0);
            let launch = self.kernels.whole(d, stream, cooperative, self.counter);
            match (launch, cooperative) {
                (Err(e), Some(_)) => {
                    kreplay_cuda::debug::line(&format!(
                        "the fused flush's cooperative launch failed ({e}): its last block discards from now on"
                    ));
                    self.cooperative_blocks.store(0, Ordering::Relaxed);
                    self.kernels.whole(d, stream, None, self.counter)?;
                }
                (launch, _) => launch?,
            }
        }
        *launched += Self::RANGES;
        Ok(())
    }
}

/// The blocks of a cooperative launch of `function` (the fused flush) on `device`: as many of
/// [`BLOCK`] threads as fit each SM at once, at most [`BLOCKS_PER_SM`], times the SMs (`blocks`
/// is [`BLOCKS_PER_SM`] × SMs); `None` where the device cannot launch cooperatively.
fn cooperative_blocks(d: &Driver, device: Device, function: Function, blocks: u32) -> Option<u32> {
    let can = device.attribute(d, Attribute::CooperativeLaunch).ok()?;
    let per_sm = function.max_active_blocks_per_sm(d, BLOCK).ok()?;
    let per_sm = u32::try_from(per_sm).ok()?.min(BLOCKS_PER_SM);
    (can == 1 && per_sm > 0).then(|| blocks / BLOCKS_PER_SM * per_sm)
}

#[cfg(test)]
mod tests;
