//! An NVTX-domain callback's data (`CUpti_NvtxData`), decoded into what the application's NVTX
//! call did ([`NvtxCall`]): a range pushed, popped, started or ended, a mark, a domain created,
//! a string registered, a category named. CUPTI passes these when the application's NVTX calls
//! reach it (`NVTX_INJECTION64_PATH`, see [`crate::nvtx_injection`]) and the tool enabled
//! `CUPTI_CB_DOMAIN_NVTX`. Handles (domains, registered strings) are returned as numbers; the
//! interception keeps what they name.

use crate::error::c_text;
use kreplay_cupti_sys::nvtx;
use kreplay_cupti_sys::{self as sys};
use std::ffi::c_void;

/// What CUPTI passes an NVTX callback, valid during that callback only.
#[repr(transparent)]
pub struct NvtxData(sys::CUpti_NvtxData);

impl NvtxData {
    /// The data behind CUPTI's pointer.
    ///
    /// # Safety
    /// `raw` is the data CUPTI passed to an NVTX-domain callback (or a test's block that keeps
    /// its contract: the parameter block of the call its callback id names, a return value of
    /// the call's type or NULL), used during it.
    pub unsafe fn from_raw<'a>(raw: *const c_void) -> &'a NvtxData {
        // SAFETY: `NvtxData` is a transparent wrapper (the caller's contract for the rest).
        unsafe { &*(raw as *const NvtxData) }
    }

    /// The call's return value as a number (a range id, a domain or string handle), when CUPTI
    /// gives one.
    fn returned(&self) -> Option<u64> {
        let value = self.0.functionReturnValue;
        // SAFETY: CUPTI points at the call's return value, 64 bits for every call read here.
        (!value.is_null()).then(|| unsafe { *(value as *const u64) })
    }

    /// The call's parameter block as `T`.
    ///
    /// # Safety
    /// `T` is the block of the call the callback id names.
    unsafe fn params<T: Copy>(&self) -> Option<T> {
        let params = self.0.functionParams as *const T;
        // SAFETY: the caller's contract; CUPTI's block lives during the callback.
        (!params.is_null()).then(|| unsafe { *params })
    }
}

/// A range's or mark's message as the call gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NvtxMessage {
    Text(String),
    /// A string registered earlier (`nvtxDomainRegisterString`), by its handle.
    Registered(u64),
    None,
}

/// What a range or mark says: its message and category (0: none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvtxEvent {
    pub message: NvtxMessage,
    pub category: u32,
}

/// An NVTX call of the application. `domain` is the domain's handle, 0 for the default domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NvtxCall {
    Push {
        operation: &'static str,
        domain: u64,
        event: NvtxEvent,
    },
    Pop {
        domain: u64,
    },
    /// `id`: the range id the call returned, when CUPTI gives it.
    Start {
        operation: &'static str,
        domain: u64,
        event: NvtxEvent,
        id: Option<u64>,
    },
    End {
        domain: u64,
        id: u64,
    },
    Mark {
        operation: &'static str,
        domain: u64,
        event: NvtxEvent,
    },
    /// `nvtxDomainCreateA`: `handle` is what it returned.
    DomainCreate {
        name: String,
        handle: Option<u64>,
    },
    /// `nvtxDomainRegisterStringA/W`.
    RegisterString {
        text: String,
        handle: Option<u64>,
    },
    /// `nvtxNameCategoryA`.
    NameCategory {
        category: u32,
        name: String,
    },
    /// A call the tool does not follow (resource naming, sync objects, ...).
    Other,
}

/// A wide string (`wchar_t`, 32 bits on Linux) as text.
///
/// # Safety
/// `ptr` is NULL or a NUL-terminated wide string.
unsafe fn wide_text(ptr: *const u32) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    let mut text = String::new();
    for i in 0.. {
        // SAFETY: within the NUL-terminated string (the caller's contract).
        let unit = unsafe { *ptr.add(i) };
        if unit == 0 {
            break;
        }
        text.push(char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER));
    }
    Some(text)
}

/// An ASCII (UTF-8) message.
///
/// # Safety
/// `ptr` is NULL or NUL-terminated.
unsafe fn text_message(ptr: *const std::ffi::c_char) -> NvtxMessage {
    // SAFETY: the caller's contract.
    unsafe { c_text(ptr) }.map_or(NvtxMessage::None, NvtxMessage::Text)
}

/// What event attributes say (`nvtxEventAttributes_t`).
///
/// # Safety
/// `attributes` is NULL or points at attributes whose message matches its type.
unsafe fn event(attributes: *const nvtx::nvtxEventAttributes_t) -> NvtxEvent {
    if attributes.is_null() {
        return NvtxEvent {
            message: NvtxMessage::None,
            category: 0,
        };
    }
    // SAFETY: the caller's contract.
    let attributes = unsafe { *attributes };
    // SAFETY: the union's member is the one `messageType` names.
    let message = unsafe {
        match attributes.messageType {
            nvtx::NVTX_MESSAGE_TYPE_ASCII => text_message(attributes.message.ascii),
            nvtx::NVTX_MESSAGE_TYPE_UNICODE => {
                wide_text(attributes.message.unicode).map_or(NvtxMessage::None, NvtxMessage::Text)
            }
            nvtx::NVTX_MESSAGE_TYPE_REGISTERED => {
                NvtxMessage::Registered(attributes.message.registered as u64)
            }
            _ => NvtxMessage::None,
        }
    };
    NvtxEvent {
        message,
        category: attributes.category,
    }
}

/// Decodes the NVTX call of callback id `cbid`.
///
/// # Safety
/// `data` is the data of an NVTX-domain callback of id `cbid` (see [`NvtxData::from_raw`]).
// The bindings' callback-id constants keep CUPTI's spelling.
#[allow(non_upper_case_globals)]
pub unsafe fn nvtx_call(cbid: u32, data: &NvtxData) -> NvtxCall {
    use sys::*;
    let returned = data.returned();
    // SAFETY (every block read below): the block of the call `cbid` names (the contract).
    unsafe {
        match cbid {
            CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangePushA
            | CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangeStartA
            | CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxMarkA => {
                let Some(p) = data.params::<nvtx::nvtxMessageA_params>() else {
                    return NvtxCall::Other;
                };
                let event = NvtxEvent {
                    message: text_message(p.message),
                    category: 0,
                };
                shaped(cbid, 0, event, returned)
            }
            CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangePushW
            | CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangeStartW
            | CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxMarkW => {
                let Some(p) = data.params::<nvtx::nvtxMessageW_params>() else {
                    return NvtxCall::Other;
                };
                let event = NvtxEvent {
                    message: wide_text(p.message).map_or(NvtxMessage::None, NvtxMessage::Text),
                    category: 0,
                };
                shaped(cbid, 0, event, returned)
            }
            CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangePushEx
            | CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangeStartEx
            | CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxMarkEx => {
                let Some(p) = data.params::<nvtx::nvtxEventEx_params>() else {
                    return NvtxCall::Other;
                };
                shaped(cbid, 0, event(p.eventAttrib), returned)
            }
            CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainRangePushEx
            | CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainRangeStartEx
            | CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainMarkEx => {
                let Some(p) = data.params::<nvtx::nvtxDomainEventEx_params>() else {
                    return NvtxCall::Other;
                };
                shaped(cbid, p.domain as u64, event(p.core.eventAttrib), returned)
            }
            CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangePop => NvtxCall::Pop { domain: 0 },
            CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainRangePop => {
                match data.params::<nvtx::nvtxDomainRangePop_params>() {
                    Some(p) => NvtxCall::Pop {
                        domain: p.domain as u64,
                    },
                    None => NvtxCall::Other,
                }
            }
            CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangeEnd => {
                match data.params::<nvtx::nvtxRangeEnd_params>() {
                    Some(p) => NvtxCall::End {
                        domain: 0,
                        id: p.id,
                    },
                    None => NvtxCall::Other,
                }
            }
            CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainRangeEnd => {
                match data.params::<nvtx::nvtxDomainRangeEnd_params>() {
                    Some(p) => NvtxCall::End {
                        domain: p.domain as u64,
                        id: p.core.id,
                    },
                    None => NvtxCall::Other,
                }
            }
            CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainCreateA => {
                match data.params::<nvtx::nvtxDomainCreateA_params>() {
                    Some(p) => NvtxCall::DomainCreate {
                        name: c_text(p.name).unwrap_or_default(),
                        handle: returned,
                    },
                    None => NvtxCall::Other,
                }
            }
            CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainRegisterStringA
            | CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainRegisterStringW => {
                match data.params::<nvtx::nvtxDomainRegisterStringA_params>() {
                    Some(p) => NvtxCall::RegisterString {
                        text: c_text(p.string).unwrap_or_default(),
                        handle: returned,
                    },
                    None => NvtxCall::Other,
                }
            }
            CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxNameCategoryA => {
                match data.params::<nvtx::nvtxNameCategoryA_params>() {
                    Some(p) => NvtxCall::NameCategory {
                        category: p.category,
                        name: c_text(p.name).unwrap_or_default(),
                    },
                    None => NvtxCall::Other,
                }
            }
            _ => NvtxCall::Other,
        }
    }
}

/// A push, start or mark of `cbid`, by its NVTX name.
#[allow(non_upper_case_globals)]
fn shaped(cbid: u32, domain: u64, event: NvtxEvent, returned: Option<u64>) -> NvtxCall {
    use sys::*;
    let (kind, operation) = match cbid {
        CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangePushA => (0, "nvtxRangePushA"),
        CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangePushW => (0, "nvtxRangePushW"),
        CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangePushEx => (0, "nvtxRangePushEx"),
        CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainRangePushEx => {
            (0, "nvtxDomainRangePushEx")
        }
        CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangeStartA => (1, "nvtxRangeStartA"),
        CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangeStartW => (1, "nvtxRangeStartW"),
        CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangeStartEx => (1, "nvtxRangeStartEx"),
        CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainRangeStartEx => {
            (1, "nvtxDomainRangeStartEx")
        }
        CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxMarkA => (2, "nvtxMarkA"),
        CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxMarkW => (2, "nvtxMarkW"),
        CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxMarkEx => (2, "nvtxMarkEx"),
        _ => (2, "nvtxDomainMarkEx"),
    };
    match kind {
        0 => NvtxCall::Push {
            operation,
            domain,
            event,
        },
        1 => NvtxCall::Start {
            operation,
            domain,
            event,
            id: returned,
        },
        _ => NvtxCall::Mark {
            operation,
            domain,
            event,
        },
    }
}

#[cfg(test)]
mod tests;
