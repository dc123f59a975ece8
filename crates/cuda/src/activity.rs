//! CUPTI's activity records of kernel executions (`CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`): how
//! launches traced without waiting (`--kernel-trace` without counters) are timed, with no driver
//! call on the application's thread. CUPTI fills buffers the tool hands it; a flush (the tool's
//! reader thread, every millisecond) gives back those whose records are complete, and their
//! kernel records wait here until the backend takes them. Times are on the host clock
//! (nanoseconds since the Unix epoch): CUPTI reads it through the tool's timestamp callback, or,
//! where that cannot be registered, through an offset taken once.

use crate::cupti_call;
use crate::error::CudaError;
use kreplay_cupti_sys::{self as sys, cupti::Cupti};
use std::alloc::Layout;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// A kernel execution as CUPTI recorded it: the correlation id of the launch call and its times
/// on the host clock (`None`: CUPTI gave the record without them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelTimes {
    pub correlation_id: u32,
    pub times: Option<(u64, u64)>,
}

/// The CUPTI whose buffers these are.
static CUPTI: OnceLock<&'static Cupti> = OnceLock::new();
/// Added to CUPTI's timestamps (0 when CUPTI reads the host clock itself).
static OFFSET_NS: AtomicI64 = AtomicI64::new(0);
/// Set once kernel executions are recorded.
static ENABLED: AtomicBool = AtomicBool::new(false);
/// Kernel records delivered, not yet taken.
static DELIVERED: Mutex<Vec<KernelTimes>> = Mutex::new(Vec::new());
/// When the last flush began (host ns).
static LAST_FLUSH_NS: AtomicU64 = AtomicU64::new(0);

/// Each buffer handed to CUPTI: a few thousand kernel records.
const BUFFER_BYTES: usize = 2 << 20;
/// CUPTI asks for 8-byte aligned buffers.
const BUFFER_ALIGN: usize = 8;

fn host_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

unsafe extern "C" fn host_clock() -> u64 {
    host_now_ns()
}

fn buffer_layout() -> Layout {
    Layout::from_size_align(BUFFER_BYTES, BUFFER_ALIGN).expect("a valid constant layout")
}

unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, most: *mut usize) {
    // SAFETY: a non-zero size; a failed allocation gives CUPTI no buffer (it drops records).
    let allocated = unsafe { std::alloc::alloc(buffer_layout()) };
    // SAFETY: CUPTI's out-parameters.
    unsafe {
        *buffer = allocated;
        *size = if allocated.is_null() { 0 } else { BUFFER_BYTES };
        *most = 0;
    }
}

unsafe extern "C" fn buffer_completed(
    _ctx: sys::CUcontext,
    _stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    // Never unwinds into CUPTI; the buffer is freed whatever happens.
    let _ = std::panic::catch_unwind(|| {
        if let Some(cupti) = CUPTI.get() {
            // SAFETY: a buffer of ours, `valid` bytes of it filled by CUPTI.
            let found = unsafe { kernel_records(cupti, buffer, valid) };
            if !found.is_empty() {
                crate::lock(&DELIVERED).extend(found);
            }
        }
    });
    // SAFETY: allocated by `buffer_requested` with this layout.
    unsafe { std::alloc::dealloc(buffer, buffer_layout()) };
}

/// The kernel records of a delivered buffer.
///
/// # Safety
/// `buffer` holds `valid` bytes of records written by CUPTI.
unsafe fn kernel_records(cupti: &Cupti, buffer: *mut u8, valid: usize) -> Vec<KernelTimes> {
    let mut found = Vec::new();
    let mut record: *mut sys::CUpti_Activity = std::ptr::null_mut();
    let Ok(next) = cupti.cuptiActivityGetNextRecord.as_ref() else {
        return found;
    };
    let offset_ns = OFFSET_NS.load(Ordering::Relaxed);
    // SAFETY: CUPTI walks its own records; it returns an error past the last one.
    while unsafe { next(buffer, valid, &mut record) } == sys::CUptiResult_CUPTI_SUCCESS {
        // SAFETY: a record CUPTI handed back, valid while the buffer is.
        if let Some(times) = unsafe { kernel_times(record, offset_ns) } {
            found.push(times);
        }
    }
    found
}

/// The correlation id and times of a kernel record (`None`: another kind of record).
///
/// # Safety
/// `record` points at a whole activity record.
unsafe fn kernel_times(record: *const sys::CUpti_Activity, offset_ns: i64) -> Option<KernelTimes> {
    // SAFETY: every record begins with its kind.
    let kind = unsafe { std::ptr::addr_of!((*record).kind).read_unaligned() };
    if kind != sys::CUpti_ActivityKind_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL {
        return None;
    }
    // Records of later versions only add fields after these (`KERNEL_PREFIX_STABLE`).
    let kernel = record.cast::<sys::CUpti_ActivityKernel10>();
    // SAFETY: a kernel record, at least as long as the fields read (see above).
    let (start, end, correlation_id) = unsafe {
        (
            std::ptr::addr_of!((*kernel).start).read_unaligned(),
            std::ptr::addr_of!((*kernel).end).read_unaligned(),
            std::ptr::addr_of!((*kernel).correlationId).read_unaligned(),
        )
    };
    let shift = |t: u64| t.saturating_add_signed(offset_ns);
    let times = (start != 0 && end >= start).then(|| (shift(start), shift(end)));
    Some(KernelTimes {
        correlation_id,
        times,
    })
}

/// The kernel record's fields read here sit where every record version since the fifth has them.
const KERNEL_PREFIX_STABLE: () = {
    use std::mem::offset_of;
    type New = sys::CUpti_ActivityKernel10;
    type Old = sys::CUpti_ActivityKernel5;
    assert!(offset_of!(New, start) == offset_of!(Old, start));
    assert!(offset_of!(New, end) == offset_of!(Old, end));
    assert!(offset_of!(New, correlationId) == offset_of!(Old, correlationId));
};

/// Starts recording kernel executions. Once per process, before its first launch; an error
/// leaves launches to be timed otherwise.
pub fn enable(cupti: &'static Cupti) -> Result<(), CudaError> {
    let () = KERNEL_PREFIX_STABLE;
    if enabled() {
        return Ok(());
    }
    // SAFETY: a plain function returning the host clock, registered before any record is made.
    let own_clock = unsafe {
        cupti_call!(
            cupti,
            cuptiActivityRegisterTimestampCallback(Some(host_clock))
        )
    };
    if own_clock.is_err() {
        let mut cupti_now = 0u64;
        // SAFETY: an out-parameter.
        unsafe { cupti_call!(cupti, cuptiGetTimestamp(&mut cupti_now)) }?;
        OFFSET_NS.store(host_now_ns() as i64 - cupti_now as i64, Ordering::Relaxed);
    }
    let _ = CUPTI.set(cupti);
    // SAFETY: the buffer functions above, which never unwind.
    unsafe {
        cupti_call!(
            cupti,
            cuptiActivityRegisterCallbacks(Some(buffer_requested), Some(buffer_completed))
        )
    }?;
    // SAFETY: enabling a kind of record.
    unsafe {
        cupti_call!(
            cupti,
            cuptiActivityEnable(sys::CUpti_ActivityKind_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
        )
    }?;
    ENABLED.store(true, Ordering::SeqCst);
    Ok(())
}

/// Whether kernel executions are being recorded.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Asks CUPTI for the buffers whose records are all complete (never a forced flush, which
/// would hand over records of kernels still running without their times). Never from inside a
/// CUPTI callback: the buffers come back on this thread.
pub fn flush() {
    let (Some(cupti), true) = (CUPTI.get(), enabled()) else {
        return;
    };
    LAST_FLUSH_NS.store(host_now_ns(), Ordering::Relaxed);
    // SAFETY: flushing our own buffers.
    let _ = unsafe { cupti_call!(cupti, cuptiActivityFlushAll(0)) };
}

/// Nanoseconds since the last flush began.
pub fn since_flush_ns() -> u64 {
    host_now_ns().saturating_sub(LAST_FLUSH_NS.load(Ordering::Relaxed))
}

/// The kernel records delivered since the last call.
pub fn take() -> Vec<KernelTimes> {
    std::mem::take(&mut *crate::lock(&DELIVERED))
}

/// Records CUPTI dropped for want of a buffer, process-wide.
pub fn dropped() -> usize {
    let Some(cupti) = CUPTI.get() else {
        return 0;
    };
    let mut dropped = 0usize;
    // SAFETY: an out-parameter; a null context asks about the global buffers.
    let read = unsafe {
        cupti_call!(
            cupti,
            cuptiActivityGetNumDroppedRecords(std::ptr::null_mut(), 0, &mut dropped)
        )
    };
    read.map_or(0, |()| dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(start: u64, end: u64, correlation: u32) -> sys::CUpti_ActivityKernel10 {
        // SAFETY: a plain C record; all zeroes is a valid value of each field.
        let mut k: sys::CUpti_ActivityKernel10 = unsafe { std::mem::zeroed() };
        k.kind = sys::CUpti_ActivityKind_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k.start = start;
        k.end = end;
        k.correlationId = correlation;
        k
    }

    #[test]
    fn a_kernel_record_gives_its_launch_and_times_on_the_host_clock() {
        let k = kernel(1_000, 3_500, 42);
        let record = std::ptr::addr_of!(k).cast::<sys::CUpti_Activity>();
        // SAFETY: a whole kernel record.
        let times = unsafe { kernel_times(record, 100) };
        assert_eq!(
            times,
            Some(KernelTimes {
                correlation_id: 42,
                times: Some((1_100, 3_600))
            })
        );
    }

    #[test]
    fn a_record_without_times_is_said_so_and_other_kinds_are_skipped() {
        let k = kernel(0, 0, 7);
        // SAFETY: a whole kernel record.
        let times = unsafe { kernel_times(std::ptr::addr_of!(k).cast(), 0) };
        assert_eq!(
            times,
            Some(KernelTimes {
                correlation_id: 7,
                times: None
            })
        );
        let mut other = kernel(1, 2, 3);
        other.kind = sys::CUpti_ActivityKind_CUPTI_ACTIVITY_KIND_MEMCPY;
        // SAFETY: as above.
        assert_eq!(
            unsafe { kernel_times(std::ptr::addr_of!(other).cast(), 0) },
            None
        );
    }
}
