//! The application's CUDA runtime and driver API calls (`--runtime-trace`, `--sys-trace`) to the
//! engine's API entry point, timed on the host clock the dispatches' timestamps are placed on.
//!
//! A call's start is taken after the tool's own work at its ENTER (a launch's snapshot, a
//! fence) and its end before the tool's work at its EXIT, and kept in CUPTI's per-call slot in
//! between: nothing is allocated per call, and function names are CUPTI's, copied once per
//! callback id. Arguments are decoded where kreplay declares them
//! (`kreplay_format::api_args`): the declarations are looked up once per callback id, the
//! values read from CUPTI's parameter block at EXIT into the record, inline. The tool's own driver calls never get here (the callback returns at once for
//! them, see `kreplay_cuda::guard`), nor do a replay's passes.
//!
//! Each thread keeps the runtime call it is inside ([`Nesting`]): a driver call made there
//! names it as its parent (recorded under `--sys-trace` only), and a launch's dispatch carries
//! the runtime call's correlation id, so that the call the application made and its dispatch
//! share one (rocprofv3's `Correlation_Id`). A driver call the application makes itself keeps
//! its own id, which its dispatch carries.

use crate::tool::Tool;
use kreplay_core::api_trace::{ApiCall, ApiLevel};
use kreplay_cuda::callback::args::declared_name;
use kreplay_cuda::callback::driver::DriverData;
use kreplay_format::api_args::{declarations, ArgDecl};
use kreplay_format::{ApiDomain, RecordedArgs};
use std::cell::Cell;
use std::sync::OnceLock;

/// The runtime call a thread is inside, and how deeply (a runtime call may call another).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Nesting {
    depth: u32,
    /// The outermost runtime call's correlation id (meaningful while `depth > 0`).
    outer: u64,
}

impl Nesting {
    /// A runtime call's ENTER.
    pub(crate) fn enter_runtime(&mut self, correlation_id: u64) {
        if self.depth == 0 {
            self.outer = correlation_id;
        }
        self.depth += 1;
    }

    /// A runtime call's EXIT.
    pub(crate) fn exit_runtime(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// The runtime call a driver call is made inside; 0 when none.
    pub(crate) fn parent(&self) -> u64 {
        if self.depth > 0 {
            self.outer
        } else {
            0
        }
    }

    /// The correlation id a dispatch launched by the driver call `driver_id` carries: the
    /// runtime call's it is made inside, else its own.
    pub(crate) fn dispatch_correlation(&self, driver_id: u64) -> u64 {
        match self.parent() {
            0 => driver_id,
            outer => outer,
        }
    }
}

thread_local! {
    static NESTING: Cell<Nesting> = const { Cell::new(Nesting { depth: 0, outer: 0 }) };
}

fn with_nesting<T>(f: impl FnOnce(&mut Nesting) -> T) -> T {
    // In a thread-exit destructor the thread-local may be gone: a fresh nesting then.
    let mut nesting = NESTING.try_with(Cell::get).unwrap_or_default();
    let result = f(&mut nesting);
    let _ = NESTING.try_with(|cell| cell.set(nesting));
    result
}

/// The correlation id a dispatch of the driver launch `driver_id` on this thread carries (see
/// the module documentation). Without API tracing the runtime domain is off and this is
/// `driver_id`.
pub(crate) fn dispatch_correlation(driver_id: u32) -> u64 {
    with_nesting(|n| n.dispatch_correlation(u64::from(driver_id)))
}

/// Callback ids above this have no cached name (none is, in CUDA 13).
const NAMED_IDS: usize = 2048;

/// A static name per callback id, copied from CUPTI's the first time the id is seen.
struct Names([OnceLock<&'static str>; NAMED_IDS]);

static RUNTIME_NAMES: Names = Names([const { OnceLock::new() }; NAMED_IDS]);
static DRIVER_NAMES: Names = Names([const { OnceLock::new() }; NAMED_IDS]);

impl Names {
    fn name(&'static self, cbid: u32, data: &DriverData) -> &'static str {
        match self.0.get(cbid as usize) {
            Some(slot) => slot.get_or_init(|| data.function_name().to_string().leak()),
            None => "a CUDA call",
        }
    }
}

/// The argument declarations per callback id (`None`: arguments not recorded), looked up by
/// the call's name the first time the id is seen.
struct Declarations([OnceLock<Option<&'static [ArgDecl]>>; NAMED_IDS]);

static RUNTIME_DECLARATIONS: Declarations = Declarations([const { OnceLock::new() }; NAMED_IDS]);
static DRIVER_DECLARATIONS: Declarations = Declarations([const { OnceLock::new() }; NAMED_IDS]);

impl Declarations {
    /// The call's arguments, decoded from its parameter block when its id has declarations.
    fn args(&'static self, cbid: u32, data: &DriverData) -> Option<RecordedArgs> {
        let decls = self
            .0
            .get(cbid as usize)?
            .get_or_init(|| declarations(declared_name(data.function_name())))
            .as_ref()?;
        let raw = data.call_args()?;
        Some(RecordedArgs::new(decls, raw.as_slice()))
    }
}

/// The host clock of the dispatches' timestamps.
fn now_ns() -> u64 {
    crate::markers::host_now_ns()
}

/// Keeps the call's start in CUPTI's slot (the tool's work at its ENTER done).
fn start(data: &DriverData) {
    let slot = data.correlation_slot();
    if !slot.is_null() {
        // SAFETY: CUPTI's per-call slot, valid and this call's from its ENTER to its EXIT.
        unsafe { *slot = now_ns() };
    }
}

/// The start [`start`] kept.
fn started(data: &DriverData) -> u64 {
    let slot = data.correlation_slot();
    if slot.is_null() {
        return 0;
    }
    // SAFETY: as in `start`.
    unsafe { *slot }
}

/// A runtime call's ENTER or EXIT (the runtime domain is enabled under the options only).
pub(crate) fn on_runtime(tool: &Tool, cbid: u32, data: &DriverData) {
    let correlation_id = u64::from(data.correlation_id());
    if data.is_enter() {
        with_nesting(|n| n.enter_runtime(correlation_id));
        start(data);
        return;
    }
    let end_ns = now_ns();
    with_nesting(Nesting::exit_runtime);
    tool.engine.api_call(&ApiCall {
        domain: ApiDomain::Runtime,
        function: RUNTIME_NAMES.name(cbid, data),
        correlation_id,
        parent_id: 0,
        start_ns: started(data),
        end_ns,
        args: RUNTIME_DECLARATIONS.args(cbid, data),
    });
}

/// Whether a driver call on this thread is recorded (`--sys-trace`, or `--runtime-trace` for
/// one made outside any runtime call).
fn records_driver(tool: &Tool) -> Option<u64> {
    let level = tool.engine.api_level();
    if level == ApiLevel::Off {
        return None;
    }
    let parent = with_nesting(|n| n.parent());
    level
        .records(ApiDomain::Driver, parent != 0)
        .then_some(parent)
}

/// A driver call's ENTER, after the tool's own work at it.
pub(crate) fn driver_entered(tool: &Tool, data: &DriverData) {
    if records_driver(tool).is_some() {
        start(data);
    }
}

/// A driver call's EXIT, before the tool's own work at it.
pub(crate) fn driver_exiting(tool: &Tool, cbid: u32, data: &DriverData) {
    let Some(parent_id) = records_driver(tool) else {
        return;
    };
    let end_ns = now_ns();
    tool.engine.api_call(&ApiCall {
        domain: ApiDomain::Driver,
        function: DRIVER_NAMES.name(cbid, data),
        correlation_id: u64::from(data.correlation_id()),
        parent_id,
        start_ns: started(data),
        end_ns,
        args: DRIVER_DECLARATIONS.args(cbid, data),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use kreplay_cupti_sys as sys;

    #[test]
    fn a_driver_call_inside_a_runtime_call_names_the_outermost_one() {
        let mut n = Nesting::default();
        assert_eq!(n.parent(), 0);
        assert_eq!(n.dispatch_correlation(7), 7);
        n.enter_runtime(10);
        n.enter_runtime(11);
        assert_eq!(n.parent(), 10);
        assert_eq!(n.dispatch_correlation(12), 10);
        n.exit_runtime();
        assert_eq!(n.parent(), 10);
        n.exit_runtime();
        assert_eq!(n.parent(), 0);
        assert_eq!(n.dispatch_correlation(13), 13);
        // An EXIT without its ENTER (the tool switched on mid-call) does not underflow.
        n.exit_runtime();
        assert_eq!(n.parent(), 0);
    }

    fn block(name: &std::ffi::CStr, slot: *mut u64) -> sys::CUpti_CallbackData {
        // SAFETY: a plain C struct; all-zero is a valid (empty) value.
        let mut data: sys::CUpti_CallbackData = unsafe { std::mem::zeroed() };
        data.functionName = name.as_ptr();
        data.correlationData = slot;
        data.correlationId = 42;
        data
    }

    #[test]
    fn names_are_copied_once_per_callback_id_and_starts_kept_in_cuptis_slot() {
        static NAMES: Names = Names([const { OnceLock::new() }; NAMED_IDS]);
        let mut slot = 0u64;
        let first = block(c"cudaLaunchKernel", &mut slot);
        // SAFETY: a block that keeps CUPTI's contract (a NUL-terminated name).
        let data = unsafe { DriverData::from_raw(&first as *const _ as *const _) };
        let name = NAMES.name(211, data);
        assert_eq!(name, "cudaLaunchKernel");
        // The same id keeps its first name without reading CUPTI's again.
        let other = block(c"cudaMemcpy", std::ptr::null_mut());
        // SAFETY: as above.
        let other = unsafe { DriverData::from_raw(&other as *const _ as *const _) };
        assert!(std::ptr::eq(NAMES.name(211, other), name));
        assert_eq!(NAMES.name(NAMED_IDS as u32, other), "a CUDA call");
        start(data);
        assert!(slot > 0);
        // No parameter block: no arguments, and the id keeps its (absent) declarations.
        static DECLS: Declarations = Declarations([const { OnceLock::new() }; NAMED_IDS]);
        assert_eq!(DECLS.args(211, data), None);
        assert_eq!(started(data), slot);
        // No slot: no start, and nothing written.
        start(other);
        assert_eq!(started(other), 0);
    }

    #[test]
    fn a_calls_arguments_are_decoded_from_its_parameter_block_by_its_declarations() {
        static DECLS: Declarations = Declarations([const { OnceLock::new() }; NAMED_IDS]);
        let mut allocated: sys::CUdeviceptr = 0x7000;
        let params = sys::cuMemAlloc_v2_params {
            dptr: &mut allocated,
            bytesize: 4096,
        };
        let mut raw = block(c"cuMemAlloc_v2", std::ptr::null_mut());
        raw.functionParams = (&params as *const sys::cuMemAlloc_v2_params).cast();
        // The call failed: its output may be unwritten, so nothing is read.
        let failed: sys::CUresult = 2;
        raw.functionReturnValue = (&failed as *const sys::CUresult).cast_mut().cast();
        // SAFETY: a block that keeps CUPTI's contract (the named call's parameters).
        let data = unsafe { DriverData::from_raw(&raw as *const _ as *const _) };
        assert_eq!(DECLS.args(30, data), None);
        let succeeded: sys::CUresult = 0;
        raw.functionReturnValue = (&succeeded as *const sys::CUresult).cast_mut().cast();
        // SAFETY: as above.
        let data = unsafe { DriverData::from_raw(&raw as *const _ as *const _) };
        let args = DECLS.args(30, data).unwrap();
        let text: Vec<(u32, String, String)> = kreplay_format::ApiArgs::Recorded(args)
            .to_vec()
            .into_iter()
            .map(|a| (a.position, a.name, a.value))
            .collect();
        assert_eq!(
            text,
            [
                (0, "dptr".to_string(), "0x7000".to_string()),
                (1, "bytesize".to_string(), "4096".to_string())
            ]
        );
        // A call without declarations is not decoded.
        let sync = block(c"cuCtxSynchronize", std::ptr::null_mut());
        // SAFETY: as above.
        let sync = unsafe { DriverData::from_raw(&sync as *const _ as *const _) };
        assert_eq!(DECLS.args(31, sync), None);
    }
}
