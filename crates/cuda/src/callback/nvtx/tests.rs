//! The decoders on made-up callback data laid out as CUPTI passes it.

use super::*;
use kreplay_cupti_sys::nvtx::*;

/// Decodes `params` as the block of `cbid`, with `returned` as the call's return value.
fn decode<T>(cbid: u32, params: &T, returned: Option<&u64>) -> NvtxCall {
    let raw = sys::CUpti_NvtxData {
        functionName: std::ptr::null(),
        functionParams: (params as *const T).cast(),
        functionReturnValue: returned.map_or(std::ptr::null(), |r| (r as *const u64).cast()),
    };
    // SAFETY: a block of the call `cbid` names, alive while decoded.
    unsafe {
        nvtx_call(
            cbid,
            NvtxData::from_raw((&raw as *const sys::CUpti_NvtxData).cast()),
        )
    }
}

fn attributes(
    message_type: i32,
    message: nvtxMessageValue_t,
    category: u32,
) -> nvtxEventAttributes_t {
    nvtxEventAttributes_t {
        version: 3,
        size: 48,
        category,
        colorType: 1,
        color: 0xff00ff,
        payloadType: 0,
        reserved0: 0,
        payload: nvtxEventAttributes_v2_payload_t { ullValue: 0 },
        messageType: message_type,
        message,
    }
}

#[test]
fn push_start_and_mark_of_an_ascii_message() {
    let step = c"step 3";
    let params = nvtxMessageA_params {
        message: step.as_ptr(),
    };
    let text = || NvtxEvent {
        message: NvtxMessage::Text("step 3".into()),
        category: 0,
    };
    assert_eq!(
        decode(
            sys::CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangePushA,
            &params,
            None
        ),
        NvtxCall::Push {
            operation: "nvtxRangePushA",
            domain: 0,
            event: text()
        }
    );
    let id = 77u64;
    assert_eq!(
        decode(
            sys::CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangeStartA,
            &params,
            Some(&id)
        ),
        NvtxCall::Start {
            operation: "nvtxRangeStartA",
            domain: 0,
            event: text(),
            id: Some(77)
        }
    );
    assert_eq!(
        decode(
            sys::CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxMarkA,
            &params,
            None
        ),
        NvtxCall::Mark {
            operation: "nvtxMarkA",
            domain: 0,
            event: text()
        }
    );
}

#[test]
fn wide_messages_are_text() {
    let wide: Vec<u32> = "λayer 2\0".chars().map(|c| c as u32).collect();
    let params = nvtxMessageW_params {
        message: wide.as_ptr(),
    };
    let NvtxCall::Push { event, .. } = decode(
        sys::CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangePushW,
        &params,
        None,
    ) else {
        panic!("not a push");
    };
    assert_eq!(event.message, NvtxMessage::Text("λayer 2".into()));
}

#[test]
fn domain_calls_carry_the_domain_category_and_registered_strings() {
    let name = c"forward";
    let ascii = attributes(
        NVTX_MESSAGE_TYPE_ASCII,
        nvtxMessageValue_t {
            ascii: name.as_ptr(),
        },
        4,
    );
    let domain = 0x5000 as nvtxDomainHandle_t;
    let params = nvtxDomainEventEx_params {
        domain,
        core: nvtxEventEx_params {
            eventAttrib: &ascii,
        },
    };
    assert_eq!(
        decode(
            sys::CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
            &params,
            None
        ),
        NvtxCall::Push {
            operation: "nvtxDomainRangePushEx",
            domain: 0x5000,
            event: NvtxEvent {
                message: NvtxMessage::Text("forward".into()),
                category: 4
            }
        }
    );
    let registered = attributes(
        NVTX_MESSAGE_TYPE_REGISTERED,
        nvtxMessageValue_t {
            registered: 0x9000 as nvtxStringHandle_t,
        },
        0,
    );
    let params = nvtxDomainEventEx_params {
        domain,
        core: nvtxEventEx_params {
            eventAttrib: &registered,
        },
    };
    let NvtxCall::Mark {
        event, operation, ..
    } = decode(
        sys::CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainMarkEx,
        &params,
        None,
    )
    else {
        panic!("not a mark");
    };
    assert_eq!(operation, "nvtxDomainMarkEx");
    assert_eq!(event.message, NvtxMessage::Registered(0x9000));
    // The registration that named it, and the domain's creation.
    let text = c"backward";
    let register = nvtxDomainRegisterStringA_params {
        domain,
        string: text.as_ptr(),
    };
    let handle = 0x9000u64;
    assert_eq!(
        decode(
            sys::CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
            &register,
            Some(&handle)
        ),
        NvtxCall::RegisterString {
            text: "backward".into(),
            handle: Some(0x9000)
        }
    );
    let create = nvtxDomainCreateA_params {
        name: c"training".as_ptr(),
    };
    let created = 0x5000u64;
    assert_eq!(
        decode(
            sys::CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainCreateA,
            &create,
            Some(&created)
        ),
        NvtxCall::DomainCreate {
            name: "training".into(),
            handle: Some(0x5000)
        }
    );
}

#[test]
fn pops_ends_and_category_names() {
    let pop = nvtxDomainRangePop_params {
        domain: 0x5000 as nvtxDomainHandle_t,
    };
    assert_eq!(
        decode(
            sys::CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainRangePop,
            &pop,
            None
        ),
        NvtxCall::Pop { domain: 0x5000 }
    );
    let dummy = 0u64;
    assert_eq!(
        decode(
            sys::CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangePop,
            &dummy,
            None
        ),
        NvtxCall::Pop { domain: 0 }
    );
    let end = nvtxDomainRangeEnd_params {
        domain: 0x5000 as nvtxDomainHandle_t,
        core: nvtxRangeEnd_params { id: 12 },
    };
    assert_eq!(
        decode(
            sys::CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxDomainRangeEnd,
            &end,
            None
        ),
        NvtxCall::End {
            domain: 0x5000,
            id: 12
        }
    );
    let name = nvtxNameCategoryA_params {
        category: 4,
        name: c"layers".as_ptr(),
    };
    assert_eq!(
        decode(
            sys::CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxNameCategoryA,
            &name,
            None
        ),
        NvtxCall::NameCategory {
            category: 4,
            name: "layers".into()
        }
    );
    // Resource naming is not followed; an absent block decodes to nothing.
    assert_eq!(
        decode(
            sys::CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxNameOsThreadA,
            &name,
            None
        ),
        NvtxCall::Other
    );
    let raw = sys::CUpti_NvtxData::default();
    // SAFETY: an empty block: every read checks for NULL.
    let data = unsafe { NvtxData::from_raw((&raw as *const sys::CUpti_NvtxData).cast()) };
    assert_eq!(
        unsafe {
            nvtx_call(
                sys::CUpti_nvtx_api_trace_cbid_CUPTI_CBID_NVTX_nvtxRangePushA,
                data,
            )
        },
        NvtxCall::Other
    );
}
