//! The application's NVTX calls (CUPTI's NVTX domain, enabled under `--marker-trace`) to the
//! engine's marker entry point, timed on the host clock the dispatches' timestamps are placed
//! on. Domain and registered-string handles are resolved to the names their creation gave them
//! (NVTX's handles are process-wide, so is this table).

use crate::tool::Tool;
use kreplay_core::markers::{MarkerCall, MarkerText};
use kreplay_cuda::callback::nvtx::{nvtx_call, NvtxCall, NvtxData, NvtxEvent, NvtxMessage};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// What the application's handles name.
#[derive(Default)]
struct Names {
    domains: HashMap<u64, String>,
    strings: HashMap<u64, String>,
}

static NAMES: Mutex<Option<Names>> = Mutex::new(None);

fn with_names<T>(f: impl FnOnce(&mut Names) -> T) -> T {
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    f(names.get_or_insert_with(Names::default))
}

pub(crate) fn host_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// NVTX's injection entry (`InitializeInjectionNvtx2`), handed to CUPTI: see
/// [`kreplay_cuda::nvtx_injection`].
///
/// # Safety
/// `get_export_table` is the argument NVTX passed to `InitializeInjectionNvtx2`.
pub unsafe fn initialize_nvtx(get_export_table: *const std::ffi::c_void) -> Result<i32, String> {
    // SAFETY: the caller's contract.
    unsafe { kreplay_cuda::nvtx_injection::forward_to_cupti(get_export_table) }
        .map_err(|e| e.to_string())
}

/// One NVTX callback.
pub(crate) fn on_nvtx(tool: &Tool, cbid: u32, data: &NvtxData) {
    if !tool.engine.markers_enabled() {
        return;
    }
    let now_ns = host_now_ns();
    // SAFETY: the data CUPTI passed to this NVTX callback of id `cbid`, used during it.
    let call = unsafe { nvtx_call(cbid, data) };
    let engine = &tool.engine;
    match call {
        NvtxCall::Push {
            operation,
            domain,
            event,
        } => {
            let (domain, message) = resolve(domain, &event);
            engine.marker(
                MarkerCall::Push(text(operation, &domain, &message, event.category)),
                now_ns,
            );
        }
        NvtxCall::Pop { domain } => {
            let domain = domain_name(domain);
            engine.marker(MarkerCall::Pop { domain: &domain }, now_ns);
        }
        NvtxCall::Start {
            operation,
            domain,
            event,
            id,
        } => {
            // Without the id NVTX returned, its end cannot be matched: not recorded.
            if let Some(id) = id {
                let (domain, message) = resolve(domain, &event);
                engine.marker(
                    MarkerCall::Start {
                        text: text(operation, &domain, &message, event.category),
                        key: Some(id),
                    },
                    now_ns,
                );
            }
        }
        NvtxCall::End { id, .. } => {
            engine.marker(MarkerCall::End { key: id }, now_ns);
        }
        NvtxCall::Mark {
            operation,
            domain,
            event,
        } => {
            let (domain, message) = resolve(domain, &event);
            engine.marker(
                MarkerCall::Mark(text(operation, &domain, &message, event.category)),
                now_ns,
            );
        }
        NvtxCall::DomainCreate { name, handle } => {
            if let Some(handle) = handle {
                with_names(|names| names.domains.insert(handle, name));
            }
        }
        NvtxCall::RegisterString { text, handle } => {
            if let Some(handle) = handle {
                with_names(|names| names.strings.insert(handle, text));
            }
        }
        NvtxCall::NameCategory { .. } | NvtxCall::Other => {}
    }
}

fn text<'a>(
    operation: &'a str,
    domain: &'a str,
    message: &'a str,
    category: u32,
) -> MarkerText<'a> {
    MarkerText {
        operation,
        domain,
        message,
        category,
    }
}

/// The domain's name: empty for the default domain, its creation's name, or its handle when
/// its creation was not seen.
fn domain_name(domain: u64) -> String {
    if domain == 0 {
        return String::new();
    }
    with_names(|names| names.domains.get(&domain).cloned())
        .unwrap_or_else(|| format!("domain {domain:#x}"))
}

/// The domain's name and the event's message, a registered string resolved.
fn resolve(domain: u64, event: &NvtxEvent) -> (String, String) {
    let message = match &event.message {
        NvtxMessage::Text(text) => text.clone(),
        NvtxMessage::Registered(handle) => {
            with_names(|names| names.strings.get(handle).cloned()).unwrap_or_default()
        }
        NvtxMessage::None => String::new(),
    };
    (domain_name(domain), message)
}
