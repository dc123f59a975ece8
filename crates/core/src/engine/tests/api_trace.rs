//! The API entry point: calls recorded as the run's level asks, each once, on the calling
//! thread, nothing without the option.

use super::*;
use crate::api_trace::{ApiCall, ApiLevel};
use kreplay_format::ApiDomain;

fn calls(h: &Harness) -> Vec<(String, u64, u64)> {
    h.sink
        .records
        .lock()
        .unwrap()
        .iter()
        .filter_map(|r| match r {
            Record::Api(c) => Some((c.function.to_string(), c.correlation_id, c.parent_id)),
            _ => None,
        })
        .collect()
}

fn send_calls(h: &Harness) {
    let call = |domain, function, correlation_id, parent_id| ApiCall {
        domain,
        function,
        correlation_id,
        parent_id,
        start_ns: 10,
        end_ns: 20,
        args: None,
    };
    h.engine
        .api_call(&call(ApiDomain::Driver, "cuLaunchKernel", 2, 1));
    h.engine
        .api_call(&call(ApiDomain::Runtime, "cudaLaunchKernel", 1, 0));
    h.engine
        .api_call(&call(ApiDomain::Driver, "cuCtxSynchronize", 3, 0));
}

#[test]
fn each_level_records_its_calls_and_off_none() {
    for (level, expected) in [
        (ApiLevel::Off, vec![]),
        (
            ApiLevel::Application,
            vec![
                ("cudaLaunchKernel".to_string(), 1, 0),
                ("cuCtxSynchronize".into(), 3, 0),
            ],
        ),
        (
            ApiLevel::All,
            vec![
                ("cuLaunchKernel".to_string(), 2, 1),
                ("cudaLaunchKernel".into(), 1, 0),
                ("cuCtxSynchronize".into(), 3, 0),
            ],
        ),
    ] {
        let h = harness_with(
            ToolConfig {
                api_trace: level,
                ..config(2, InProcessMode::KernelReplay)
            },
            None,
        );
        assert_eq!(h.engine.api_level(), level);
        send_calls(&h);
        assert_eq!(calls(&h), expected, "{level:?}");
    }
}
