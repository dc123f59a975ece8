//! The API domain (`--runtime-trace`, `--sys-trace`): the application's CUDA runtime and driver
//! API calls. Both devices reach it through one entry point, [`crate::Engine::api_call`]: the
//! CUDA backend from CUPTI's runtime- and driver-API callbacks, the reference device from its
//! runtime's calls. A call is recorded once, when it returns, with the times the backend took
//! around the application's own call (after the tool's work at its entry, before the tool's work
//! at its return), so that the tool's snapshots never lengthen it.
//!
//! HIP's layers map onto CUDA's as rocprofv3 traces them: `--runtime-trace` (rocprofv3: the HIP
//! runtime API, not the HSA API under it) records the calls the application makes itself — its
//! runtime calls, and driver calls it makes directly ([`ApiLevel::Application`]);
//! `--sys-trace` (rocprofv3: HIP and HSA) also the driver calls the runtime makes on its behalf
//! ([`ApiLevel::All`]), each naming the runtime call as its parent.

use kreplay_format::{ApiArgs, ApiDomain, ApiRecord, RecordedArgs};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Which API calls a run records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiLevel {
    /// None (the default).
    #[default]
    Off,
    /// `--runtime-trace`: the calls the application makes itself (runtime calls, and driver
    /// calls made outside any runtime call).
    Application,
    /// `--sys-trace`: also the driver calls made inside the application's runtime calls.
    All,
}

/// One API call of the application, as a backend hands it to [`crate::Engine::api_call`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiCall {
    pub domain: ApiDomain,
    /// The function as CUDA names it (a static name: nothing is allocated per call).
    pub function: &'static str,
    /// The call's id in its process; a launch's dispatch carries the same.
    pub correlation_id: u64,
    /// The id of the runtime call this driver call was made inside; 0 when none.
    pub parent_id: u64,
    /// On the clock of the dispatches' timestamps.
    pub start_ns: u64,
    pub end_ns: u64,
    /// The arguments the backend decoded (`kreplay_format::api_args`), held inline.
    pub args: Option<RecordedArgs>,
}

impl ApiLevel {
    /// Whether a call of `domain` made inside another call (`nested`) is recorded.
    pub fn records(self, domain: ApiDomain, nested: bool) -> bool {
        match self {
            ApiLevel::Off => false,
            ApiLevel::Application => !(nested && domain == ApiDomain::Driver),
            ApiLevel::All => true,
        }
    }
}

impl ApiCall {
    /// The record of the call on thread `tid` of process `pid`.
    pub fn record(&self, pid: u32, tid: u64) -> ApiRecord {
        ApiRecord {
            correlation_id: self.correlation_id,
            parent_id: self.parent_id,
            domain: self.domain,
            function: Cow::Borrowed(self.function),
            pid,
            tid,
            start_ns: self.start_ns,
            end_ns: self.end_ns.max(self.start_ns),
            args: self.args.map_or(ApiArgs::None, ApiArgs::Recorded),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_trace_records_the_applications_own_calls_and_sys_trace_all() {
        use ApiDomain::*;
        for (domain, nested, application, all) in [
            (Runtime, false, true, true),
            (Driver, false, true, true),
            (Driver, true, false, true),
        ] {
            assert!(!ApiLevel::Off.records(domain, nested));
            assert_eq!(ApiLevel::Application.records(domain, nested), application);
            assert_eq!(ApiLevel::All.records(domain, nested), all);
        }
    }
}
