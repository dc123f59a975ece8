//! The workload's API calls, recorded through the engine's API entry point: every call of the
//! application once, as the CUDA runtime and driver calls it stands for, a launch's runtime call
//! sharing its dispatch's correlation id, none of the engine's own work (snapshots, replayed
//! passes, a graph's nodes), the same with kernel replay as without, nothing without the option.

use super::*;
use kreplay_core::api_trace::ApiLevel;
use kreplay_format::{ApiDomain, ApiRecord, DispatchRecord};

fn api_calls(records: &[Record]) -> Vec<ApiRecord> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Api(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

fn functions(calls: &[ApiRecord], domain: ApiDomain) -> Vec<String> {
    calls
        .iter()
        .filter(|c| c.domain == domain)
        .map(|c| c.function.to_string())
        .collect()
}

#[test]
fn every_call_of_the_application_is_recorded_once_and_a_launch_shares_its_dispatchs_id() {
    let (outcome, records) = profiled_with(InProcessMode::KernelReplay, 2, |c| {
        c.api_trace = ApiLevel::All;
    });
    assert!(verify(&outcome, &reference()).passed);
    let calls = api_calls(&records);
    let runtime = functions(&calls, ApiDomain::Runtime);
    let launches = runtime.iter().filter(|f| *f == "cudaLaunchKernel").count();
    assert_eq!(
        runtime.iter().filter(|f| *f == "cudaGraphLaunch").count(),
        1
    );
    // Each runtime call is made of one driver call, which names it; the application maps and
    // unmaps virtual memory with driver calls of its own.
    assert_eq!(
        functions(&calls, ApiDomain::Driver).len(),
        runtime.len() + 2
    );
    let direct: Vec<&str> = calls
        .iter()
        .filter(|c| c.domain == ApiDomain::Driver && c.parent_id == 0)
        .map(|c| &*c.function)
        .collect();
    assert_eq!(direct, ["cuMemMap", "cuMemUnmap"]);
    for call in calls
        .iter()
        .filter(|c| c.domain == ApiDomain::Driver && c.parent_id != 0)
    {
        let parent = calls
            .iter()
            .find(|p| p.correlation_id == call.parent_id)
            .unwrap_or_else(|| panic!("{} has no parent", call.function));
        assert_eq!(parent.domain, ApiDomain::Runtime);
        assert!(parent.start_ns < call.start_ns && call.end_ns < parent.end_ns);
    }
    // Every dispatch (each pass) carries the correlation id of one launch call, and every
    // kernel launch call has exactly one dispatch.
    let dispatches: Vec<&DispatchRecord> = records
        .iter()
        .filter_map(|r| match r {
            Record::Dispatch(d) => Some(d),
            _ => None,
        })
        .collect();
    for dispatch in &dispatches {
        let call = calls
            .iter()
            .find(|c| c.correlation_id == dispatch.correlation_id)
            .expect("a dispatch's correlation id names an API call");
        assert!(
            matches!(&*call.function, "cudaLaunchKernel" | "cudaGraphLaunch"),
            "{}",
            call.function
        );
    }
    // Every launch call has its dispatches but the one captured into a graph (which runs
    // nothing), and the graph launch has its nodes'.
    let mut linked: Vec<u64> = dispatches.iter().map(|d| d.correlation_id).collect();
    linked.sort();
    linked.dedup();
    assert_eq!(linked.len(), (launches - 1) + 1);
    // The correlation ids of the calls are unique.
    let mut ids: Vec<u64> = calls.iter().map(|c| c.correlation_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), calls.len());
}

#[test]
fn the_same_calls_with_and_without_kernel_replay_and_none_without_the_option() {
    let names = |mode, groups| {
        let (_, records) = profiled_with(mode, groups, |c| c.api_trace = ApiLevel::Application);
        let calls = api_calls(&records);
        // The application's own calls: no driver call made inside a runtime call.
        assert!(calls
            .iter()
            .all(|c| c.domain == ApiDomain::Runtime || c.parent_id == 0));
        calls
            .iter()
            .map(|c| c.function.to_string())
            .collect::<Vec<_>>()
    };
    let replayed = names(InProcessMode::KernelReplay, 2);
    assert!(!replayed.is_empty());
    assert_eq!(replayed, names(InProcessMode::Single, 0));
    assert_eq!(replayed, names(InProcessMode::Single, 1));
    let (_, records) = profiled(InProcessMode::KernelReplay, 2);
    assert!(api_calls(&records).is_empty());
}
