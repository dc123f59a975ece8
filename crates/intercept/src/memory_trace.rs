//! The application's copies, allocations and frees for the memory traces
//! (`--memory-copy-trace`, `--memory-allocation-trace`), from the driver callbacks of its own
//! calls (the tool's own calls return before reaching here: `callbacks`), handed to the
//! engine's entry points ([`kreplay_core::Engine::memory_copy`],
//! [`kreplay_core::Engine::memory_allocation`]). A call is timed on the host clock of the
//! dispatches' timestamps from its ENTER (after the engine's fence) to its EXIT: for a
//! synchronous copy that is the copy; for an asynchronous one, its enqueueing (device times
//! would need events or CUPTI activity records around the application's work: not taken, so
//! that the traces add nothing to the application's streams). Sides and memory kinds come from
//! the engine's inventory (host memory that is not registered is pageable host memory). A
//! call that failed is not recorded, nor an asynchronous copy being captured into a graph (it
//! does not execute then; a graph's copy nodes make no call of the application's either).
//! GPU-unverified: no GPU run has checked these yet.

use crate::classify::{alloc_kind, AllocApi, DriverEvent, FreeApi};
use crate::tool::Tool;
use kreplay_backend::resolve_stream;
use kreplay_core::backend::AllocKind;
use kreplay_core::memory_trace::{AllocationCall, CopyCall, CopySide};
use kreplay_cuda::callback::copies::{copy_params, per_thread_stream, CopyEnd, CopyParams};
use kreplay_cuda::callback::driver::DriverData;
use kreplay_cuda::callback::memory::{
    allocated, allocation_stream, free_stream, freed, mapped, Freed,
};
use kreplay_cuda::CUstream;
use kreplay_format::AllocationOperation;
use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

/// What a call between its ENTER and EXIT will be recorded as.
enum What {
    Copy {
        src: CopySide,
        dst: CopySide,
        bytes: u64,
        stream_id: u64,
    },
    /// An allocation, read at EXIT.
    Alloc(AllocApi),
    /// A `cuMemMap`, read at EXIT.
    Map,
    Free {
        operation: AllocationOperation,
        kind: AllocKind,
        address: u64,
        stream_id: Option<u64>,
    },
}

struct Pending {
    cbid: u32,
    start_ns: u64,
    what: What,
}

thread_local! {
    /// This thread's traced calls between their ENTER and EXIT.
    static PENDING: RefCell<Vec<Pending>> = const { RefCell::new(Vec::new()) };
}

fn host_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// At a driver call's ENTER (after the engine's fence, before a free leaves the inventory):
/// what it will be recorded as, and when it began.
pub(crate) fn on_enter(tool: &Tool, cbid: u32, event: DriverEvent, data: &DriverData) {
    let engine = &tool.engine;
    if !engine.memory_copies_enabled() && !engine.memory_allocations_enabled() {
        return;
    }
    let what = if engine.memory_copies_enabled() {
        // SAFETY: the parameter block of the call named, inside its callback.
        unsafe { copy_params(data.function_name(), data.params()) }
            .filter(|copy| !captured(tool, copy.stream, data.function_name()))
            .map(|copy| copy_what(tool, data, copy))
    } else {
        None
    };
    let what = what.or_else(|| {
        if !engine.memory_allocations_enabled() || data.params().is_null() {
            return None;
        }
        match event {
            // `cuMemSetAccess` makes mapped memory accessible (the inventory's map): the
            // mapping itself is `cuMemMap`'s.
            DriverEvent::Alloc(AllocApi::Map) => None,
            DriverEvent::Alloc(api) => Some(What::Alloc(api)),
            DriverEvent::Free(api) => Some(free_what(tool, data, api)),
            _ if data.function_name() == "cuMemMap" => Some(What::Map),
            _ => None,
        }
    });
    if let Some(what) = what {
        let start_ns = host_now_ns();
        let _ = PENDING.try_with(|p| {
            p.borrow_mut().push(Pending {
                cbid,
                start_ns,
                what,
            })
        });
    }
}

/// At a driver call's EXIT (before the engine's fence is let go): the record of a traced call
/// that succeeded.
pub(crate) fn on_exit(tool: &Tool, cbid: u32, data: &DriverData) {
    let Some(pending) = PENDING
        .try_with(|p| {
            let mut pending = p.borrow_mut();
            let at = pending.iter().rposition(|p| p.cbid == cbid)?;
            Some(pending.remove(at))
        })
        .ok()
        .flatten()
    else {
        return;
    };
    let end_ns = host_now_ns();
    if !data.succeeded() {
        return;
    }
    let engine = &tool.engine;
    let api = data.function_name();
    let start_ns = pending.start_ns;
    let device = || tool.device_of(data.context()).map(u64::from);
    match pending.what {
        What::Copy {
            src,
            dst,
            bytes,
            stream_id,
        } => {
            let call = CopyCall {
                operation: api,
                src,
                dst,
                bytes,
                stream_id,
            };
            engine.memory_copy(&call, start_ns, end_ns);
        }
        What::Alloc(api_kind) => {
            // SAFETY: the call's parameter block (not NULL: checked at ENTER), at the EXIT
            // callback of a call that succeeded.
            let (address, size) = unsafe { allocated(api_kind, data.params()) };
            let stream = unsafe { allocation_stream(api_kind, data.params()) };
            let kind = alloc_kind(api_kind);
            let call = AllocationCall {
                operation: AllocationOperation::Allocate,
                kind,
                api,
                device: if kind == AllocKind::Host {
                    None
                } else {
                    device()
                },
                address,
                size,
                stream_id: stream.map(|s| stream_id(tool, s, api)),
            };
            engine.memory_allocation(&call, start_ns, end_ns);
        }
        What::Map => {
            // SAFETY: cuMemMap's parameter block (not NULL: checked at ENTER), in its callback.
            let (address, size) = unsafe { mapped(data.params()) };
            let call = AllocationCall {
                operation: AllocationOperation::VmemAllocate,
                kind: AllocKind::VirtualMapping,
                api,
                device: device(),
                address,
                size,
                stream_id: None,
            };
            engine.memory_allocation(&call, start_ns, end_ns);
        }
        What::Free {
            operation,
            kind,
            address,
            stream_id,
        } => {
            let call = AllocationCall {
                operation,
                kind,
                api,
                device: None,
                address,
                size: 0,
                stream_id,
            };
            engine.memory_allocation(&call, start_ns, end_ns);
        }
    }
}

/// Whether an asynchronous copy is being captured into a graph: it does not execute now (as a
/// captured launch, it is not recorded).
fn captured(tool: &Tool, stream: Option<CUstream>, api: &str) -> bool {
    stream.is_some_and(|stream| {
        let stream = resolve_stream(stream, per_thread_stream(api));
        kreplay_cuda::query::is_capturing(tool.driver, stream)
    })
}

/// A stream's id as the dispatches' records carry it.
fn stream_id(tool: &Tool, stream: CUstream, api: &str) -> u64 {
    let stream = resolve_stream(stream, per_thread_stream(api));
    kreplay_cuda::query::stream_id(tool.driver, stream)
}

/// A copy's sides (device or host, through the inventory), bytes and stream.
fn copy_what(tool: &Tool, data: &DriverData, copy: CopyParams) -> What {
    let calling = tool.device_of(data.context()).map(u64::from);
    let inventory = tool.engine.inventory();
    let side = |end: CopyEnd| match end {
        CopyEnd::Host(address) => CopySide {
            device: None,
            address,
        },
        CopyEnd::Device(address) => CopySide {
            device: inventory
                .find_anywhere(address)
                .map(|r| u64::from(r.device))
                .or(calling),
            address,
        },
        // Registered or pinned host memory, or none the inventory knows (pageable host
        // memory), is the host's; any other kind is its device's.
        CopyEnd::Unified(address) => CopySide {
            device: inventory
                .find_anywhere(address)
                .filter(|r| r.kind != AllocKind::Host)
                .map(|r| u64::from(r.device)),
            address,
        },
        CopyEnd::Peer { context, address } => CopySide {
            device: tool.device_of(context).map(u64::from).or(calling),
            address,
        },
        CopyEnd::Array => CopySide {
            device: calling,
            address: 0,
        },
    };
    What::Copy {
        src: side(copy.src),
        dst: side(copy.dst),
        bytes: copy.bytes,
        stream_id: copy
            .stream
            .map_or(0, |s| stream_id(tool, s, data.function_name())),
    }
}

/// A free's address, memory kind (from the inventory, before the free leaves it) and stream.
fn free_what(tool: &Tool, data: &DriverData, api: FreeApi) -> What {
    // SAFETY: the call's parameter block (not NULL: checked by the caller), at its ENTER.
    let address = match unsafe { freed(api, data.params()) } {
        Freed::Base(address) => address,
        Freed::Range { base, .. } => base,
    };
    let stream = unsafe { free_stream(api, data.params()) };
    let by_api = match api {
        FreeApi::Free => AllocKind::Device,
        FreeApi::FreeAsync => AllocKind::Pool,
        FreeApi::FreeHost | FreeApi::HostUnregister => AllocKind::Host,
        FreeApi::Unmap => AllocKind::VirtualMapping,
    };
    let kind = tool
        .engine
        .inventory()
        .find_anywhere(address)
        .map_or(by_api, |r| r.kind);
    What::Free {
        operation: if api == FreeApi::Unmap {
            AllocationOperation::VmemFree
        } else {
            AllocationOperation::Free
        },
        kind,
        address,
        stream_id: stream.map(|s| stream_id(tool, s, data.function_name())),
    }
}
