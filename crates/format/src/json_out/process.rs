//! One process's records as the document writes them: `buffer_records.kernel_dispatch` and
//! `callback_records.counter_collection` (one per pass), and the `summary` statistics.

use super::kinds::{
    BUFFER_TRACING_KERNEL_DISPATCH, KERNEL_DISPATCH_COMPLETE, SIZE_DISPATCH_DATA,
    SIZE_DISPATCH_INFO, SIZE_KERNEL_DISPATCH_RECORD,
};
use super::parts::{handle, xyz};
use super::summary::DomainStats;
use super::tables::{Agents, Counters, Kernels};
use crate::facts::{grid_threads, kernel_facts, KernelFacts};
use crate::records::DispatchRecord;
use crate::run::ProcessRun;
use crate::stats::{merged, process_kernel_stats};
use serde_json::{json, Value};

/// One process and the ids its records are written with.
pub(super) struct Process<'a> {
    run: &'a ProcessRun,
    pub(super) agents: Agents<'a>,
    pub(super) counters: Counters<'a>,
    pub(super) kernels: Kernels<'a>,
    /// The document is of a kernel-replay run: every record carries `replay_pass`.
    replay: bool,
}

impl<'a> Process<'a> {
    pub(super) fn new(run: &'a ProcessRun, replay: bool) -> Process<'a> {
        Process {
            run,
            agents: Agents::new(run),
            counters: Counters::new(run),
            kernels: Kernels::new(run),
            replay,
        }
    }

    /// `replay_pass` of a record: the pass (0 for a dispatch that ran once) in a kernel-replay
    /// run, nothing otherwise.
    fn replay_pass(&self, dispatch: &DispatchRecord) -> Option<u32> {
        self.replay.then(|| dispatch.replay_pass.unwrap_or(0))
    }

    fn dispatch_info(&self, dispatch: &DispatchRecord, facts: &KernelFacts) -> Value {
        json!({
            "size": SIZE_DISPATCH_INFO,
            "agent_id": handle(self.agents.handle(dispatch.agent_id)),
            "queue_id": handle(dispatch.stream_id),
            "kernel_id": self.kernels.slot(dispatch.kernel_id),
            "dispatch_id": dispatch.dispatch_id,
            "private_segment_size": facts.scratch_size,
            "group_segment_size": facts.lds_block_size,
            "workgroup_size": xyz(dispatch.block.map(u64::from)),
            "grid_size": xyz(grid_threads(dispatch)),
        })
    }

    /// A `buffer_records.kernel_dispatch` record: one per pass.
    pub(super) fn kernel_dispatch_json(&self, dispatch: &DispatchRecord) -> Value {
        let facts = kernel_facts(self.run, dispatch);
        let mut trace = json!({
            "size": SIZE_KERNEL_DISPATCH_RECORD,
            "kind": BUFFER_TRACING_KERNEL_DISPATCH,
            "operation": KERNEL_DISPATCH_COMPLETE,
            "thread_id": dispatch.tid,
            "correlation_id": correlation(dispatch),
            "start_timestamp": dispatch.start_ns,
            "end_timestamp": dispatch.end_ns,
            "dispatch_info": self.dispatch_info(dispatch, &facts),
            "stream_id": handle(dispatch.stream_id),
        });
        if let Some(pass) = self.replay_pass(dispatch) {
            trace["replay_pass"] = json!(pass);
        }
        trace
    }

    /// A `callback_records.counter_collection` record: one per pass that collected counters.
    pub(super) fn counter_record_json(&self, dispatch: &DispatchRecord) -> Value {
        let facts = kernel_facts(self.run, dispatch);
        let agent_handle = self.agents.handle(dispatch.agent_id);
        let records: Vec<Value> = dispatch
            .counters
            .iter()
            .map(|sample| {
                json!({
                    "counter_id": handle(self.counters.handle_of(agent_handle, &sample.name)),
                    "value": sample.value,
                })
            })
            .collect();
        let mut record = json!({
            "dispatch_data": {
                "size": SIZE_DISPATCH_DATA,
                "correlation_id": correlation(dispatch),
                "start_timestamp": dispatch.start_ns,
                "end_timestamp": dispatch.end_ns,
                "dispatch_info": self.dispatch_info(dispatch, &facts),
            },
            "records": records,
            "thread_id": dispatch.tid,
            "stream_id": handle(dispatch.stream_id),
            "arch_vgpr_count": facts.vgpr_count,
            "accum_vgpr_count": 0,
            "sgpr_count": 0,
            "lds_block_size_v": facts.lds_block_size,
        });
        if let Some(pass) = self.replay_pass(dispatch) {
            record["replay_pass"] = json!(pass);
        }
        record
    }

    /// `summary`: the kernel-dispatch statistics, each dispatch counted once
    /// ([`crate::stats::dispatches_counted_once`]).
    pub(super) fn summary(&self) -> Vec<DomainStats> {
        let operations = process_kernel_stats(self.run);
        let total = merged(operations.values());
        if total.count == 0 {
            Vec::new()
        } else {
            vec![DomainStats { total, operations }]
        }
    }
}

/// rocprofiler's correlation id: kreplay's (the launch's), no external id, no ancestor (0:
/// kreplay traces no API call a launch could descend from).
fn correlation(dispatch: &DispatchRecord) -> Value {
    json!({ "internal": dispatch.correlation_id, "external": 0, "ancestor": 0 })
}
