//! NVTX's callback parameter blocks (`generated_nvtx_meta.h`) and event attributes
//! (`nvtx3/nvToolsExt.h`'s `nvtxEventAttributes_v2`), what CUPTI passes an NVTX-domain callback
//! in `CUpti_NvtxData::functionParams`.
//!
//! `generated_nvtx_meta.h` includes the NVTX v3 headers (`nvtx3/nvToolsExt*.h`), which the wheels
//! `generate.sh` reads do not ship, so these are not in `types.rs`. Written to bindgen's output
//! for those headers (C++ layout, `#[repr(C)]`) and checked against their sizes and offsets by the
//! tests below; `generate.sh` says how to regenerate them where the NVTX headers are installed.
//! Only the blocks kreplay reads are here.

use core::ffi::{c_char, c_void};

/// `nvtxDomainHandle_t`, `nvtxStringHandle_t`: opaque handles the NVTX implementation (CUPTI)
/// returns.
pub type nvtxDomainHandle_t = *mut c_void;
pub type nvtxStringHandle_t = *mut c_void;
/// `nvtxRangeId_t`.
pub type nvtxRangeId_t = u64;

/// `nvtxMessageType_t`.
pub const NVTX_MESSAGE_UNKNOWN: i32 = 0;
pub const NVTX_MESSAGE_TYPE_ASCII: i32 = 1;
pub const NVTX_MESSAGE_TYPE_UNICODE: i32 = 2;
pub const NVTX_MESSAGE_TYPE_REGISTERED: i32 = 3;

/// `nvtxMessageValue_t`.
#[repr(C)]
#[derive(Copy, Clone)]
pub union nvtxMessageValue_t {
    pub ascii: *const c_char,
    /// `const wchar_t*` (32-bit on Linux).
    pub unicode: *const u32,
    pub registered: nvtxStringHandle_t,
}

/// `nvtxEventAttributes_v2::payload_t`.
#[repr(C)]
#[derive(Copy, Clone)]
pub union nvtxEventAttributes_v2_payload_t {
    pub ullValue: u64,
    pub llValue: i64,
    pub dValue: f64,
    pub uiValue: u32,
    pub iValue: i32,
    pub fValue: f32,
}

/// `nvtxEventAttributes_t` (version 2, the only one NVTX v3 defines).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct nvtxEventAttributes_v2 {
    pub version: u16,
    pub size: u16,
    pub category: u32,
    pub colorType: i32,
    pub color: u32,
    pub payloadType: i32,
    pub reserved0: i32,
    pub payload: nvtxEventAttributes_v2_payload_t,
    pub messageType: i32,
    pub message: nvtxMessageValue_t,
}
pub type nvtxEventAttributes_t = nvtxEventAttributes_v2;

/// `nvtxMarkA_params`, `nvtxRangeStartA_params`, `nvtxRangePushA_params` (one `message`).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct nvtxMessageA_params {
    pub message: *const c_char,
}
pub type nvtxMarkA_params = nvtxMessageA_params;
pub type nvtxRangeStartA_params = nvtxMessageA_params;
pub type nvtxRangePushA_params = nvtxMessageA_params;

/// `nvtxMarkW_params`, `nvtxRangeStartW_params`, `nvtxRangePushW_params`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct nvtxMessageW_params {
    pub message: *const u32,
}
pub type nvtxMarkW_params = nvtxMessageW_params;
pub type nvtxRangeStartW_params = nvtxMessageW_params;
pub type nvtxRangePushW_params = nvtxMessageW_params;

/// `nvtxMarkEx_params`, `nvtxRangeStartEx_params`, `nvtxRangePushEx_params`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct nvtxEventEx_params {
    pub eventAttrib: *const nvtxEventAttributes_t,
}
pub type nvtxMarkEx_params = nvtxEventEx_params;
pub type nvtxRangeStartEx_params = nvtxEventEx_params;
pub type nvtxRangePushEx_params = nvtxEventEx_params;

/// `nvtxRangeEnd_params`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct nvtxRangeEnd_params {
    pub id: nvtxRangeId_t,
}

/// `nvtxDomainMarkEx_params`, `nvtxDomainRangeStartEx_params`, `nvtxDomainRangePushEx_params`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct nvtxDomainEventEx_params {
    pub domain: nvtxDomainHandle_t,
    pub core: nvtxEventEx_params,
}
pub type nvtxDomainMarkEx_params = nvtxDomainEventEx_params;
pub type nvtxDomainRangeStartEx_params = nvtxDomainEventEx_params;
pub type nvtxDomainRangePushEx_params = nvtxDomainEventEx_params;

/// `nvtxDomainRangeEnd_params`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct nvtxDomainRangeEnd_params {
    pub domain: nvtxDomainHandle_t,
    pub core: nvtxRangeEnd_params,
}

/// `nvtxDomainRangePop_params`, `nvtxDomainDestroy_params`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct nvtxDomain_params {
    pub domain: nvtxDomainHandle_t,
}
pub type nvtxDomainRangePop_params = nvtxDomain_params;
pub type nvtxDomainDestroy_params = nvtxDomain_params;

/// `nvtxDomainCreateA_params`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct nvtxDomainCreateA_params {
    pub name: *const c_char,
}

/// `nvtxDomainRegisterStringA_params` (the header declares the W variant's string `const char*`
/// as well).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct nvtxDomainRegisterStringA_params {
    pub domain: nvtxDomainHandle_t,
    pub string: *const c_char,
}

/// `nvtxNameCategoryA_params`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct nvtxNameCategoryA_params {
    pub category: u32,
    pub name: *const c_char,
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    /// The layout of `nvToolsExt.h`'s `nvtxEventAttributes_v2` on LP64 (its
    /// `NVTX_EVENT_ATTRIB_STRUCT_SIZE` is 48).
    #[test]
    fn event_attributes_have_nvtxs_layout() {
        assert_eq!(size_of::<nvtxEventAttributes_v2>(), 48);
        assert_eq!(offset_of!(nvtxEventAttributes_v2, category), 4);
        assert_eq!(offset_of!(nvtxEventAttributes_v2, colorType), 8);
        assert_eq!(offset_of!(nvtxEventAttributes_v2, payload), 24);
        assert_eq!(offset_of!(nvtxEventAttributes_v2, messageType), 32);
        assert_eq!(offset_of!(nvtxEventAttributes_v2, message), 40);
        assert_eq!(offset_of!(nvtxDomainEventEx_params, core), 8);
        assert_eq!(offset_of!(nvtxDomainRangeEnd_params, core), 8);
        assert_eq!(offset_of!(nvtxNameCategoryA_params, name), 8);
        assert_eq!(size_of::<nvtxDomainRegisterStringA_params>(), 16);
    }
}
