//! The API domain's record (`--runtime-trace`, `--sys-trace`): one CUDA runtime or driver API
//! call of the application, as rocprofv3 records a HIP API call (`HIP_RUNTIME_API`): its
//! function, thread, start and end on the clock of the dispatches' timestamps, and the
//! correlation id that a launch's dispatch carries too (rocprofv3's `Correlation_Id`).
//!
//! HIP's domains map onto CUDA's: the HIP runtime API (what the application calls) is the CUDA
//! runtime API ([`ApiDomain::Runtime`], `CUDA_RUNTIME_API`); the HSA API under it is the CUDA
//! driver API ([`ApiDomain::Driver`], `CUDA_DRIVER_API`). A driver call the runtime makes on
//! the application's behalf names the runtime call as its parent (rocprofv3's correlation id
//! `ancestor`), and a dispatch carries the id of its launch's outermost call.
//!
//! The database keeps each call as a `rocpd_region` row named by its function, with a
//! `rocpd_event` of its domain's category whose `correlation_id` and `stack_id` are the call's
//! id and `parent_stack_id` its parent's; rocpd's `regions` view reads them. Its arguments,
//! where kreplay decodes them ([`ApiArgs`], `crate::api_args`), are `rocpd_arg` rows of that
//! event (rocpd's `region_args` view) and the JSON's `args`.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// rocprofv3's category of a CUDA runtime API call (HIP's `HIP_RUNTIME_API`).
pub const CUDA_RUNTIME_API: &str = "CUDA_RUNTIME_API";
/// rocprofv3's category of a CUDA driver API call (HIP's layer beneath, `HSA_CORE_API`).
pub const CUDA_DRIVER_API: &str = "CUDA_DRIVER_API";

/// Which API a call belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiDomain {
    /// The CUDA runtime API (`cuda*`): rocprofv3's `HIP_RUNTIME_API`.
    Runtime,
    /// The CUDA driver API (`cu*`): rocprofv3's HSA API, the layer beneath.
    Driver,
}

impl ApiDomain {
    /// The category rocpd's `regions` view and the CSV's `Domain` column show.
    pub fn category(self) -> &'static str {
        match self {
            ApiDomain::Runtime => CUDA_RUNTIME_API,
            ApiDomain::Driver => CUDA_DRIVER_API,
        }
    }

    pub fn from_category(text: &str) -> Option<ApiDomain> {
        [ApiDomain::Runtime, ApiDomain::Driver]
            .into_iter()
            .find(|domain| domain.category() == text)
    }
}

/// One API call of the application, recorded when it returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiRecord {
    /// The call's id in its process (CUPTI's correlation id on the GPU); a launch's dispatch
    /// carries the same (rocprofv3's `Correlation_Id`).
    pub correlation_id: u64,
    /// The id of the call this one was made inside (a runtime call's, for the driver calls it
    /// makes); 0 for a call the application made itself.
    #[serde(default)]
    pub parent_id: u64,
    pub domain: ApiDomain,
    /// The function, as CUDA names it (`cudaLaunchKernel`, `cuMemcpyHtoD_v2`, ...): a static
    /// name while recording, owned once read back.
    pub function: Cow<'static, str>,
    pub pid: u32,
    pub tid: u64,
    /// Nanoseconds on the clock of the dispatches' timestamps, at the call's entry and return.
    pub start_ns: u64,
    pub end_ns: u64,
    /// The call's arguments kreplay decodes (none for most calls).
    #[serde(default)]
    pub args: crate::api_args::ApiArgs,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_round_trip() {
        for domain in [ApiDomain::Runtime, ApiDomain::Driver] {
            assert_eq!(ApiDomain::from_category(domain.category()), Some(domain));
        }
        assert_eq!(ApiDomain::from_category("HIP_RUNTIME_API"), None);
    }

    #[test]
    fn a_record_survives_serde() {
        let record = ApiRecord {
            correlation_id: 7,
            parent_id: 3,
            domain: ApiDomain::Driver,
            function: Cow::Borrowed("cuLaunchKernel"),
            pid: 1,
            tid: 2,
            start_ns: 10,
            end_ns: 20,
            args: Default::default(),
        };
        let text = serde_json::to_string(&record).unwrap();
        assert_eq!(serde_json::from_str::<ApiRecord>(&text).unwrap(), record);
    }
}
