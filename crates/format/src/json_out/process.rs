//! One process's records as the document writes them: `buffer_records.kernel_dispatch` and
//! `callback_records.counter_collection` (one per pass, built together), and the `summary`
//! statistics.

use super::dispatch_json::{
    Correlation, CounterRecord, CounterValue, DispatchData, DispatchInfo, Handle, KernelDispatch,
};
use super::kinds::{
    BUFFER_TRACING_KERNEL_DISPATCH, KERNEL_DISPATCH_COMPLETE, SIZE_DISPATCH_DATA,
    SIZE_DISPATCH_INFO, SIZE_KERNEL_DISPATCH_RECORD,
};
use super::summary::DomainStats;
use super::tables::{Agents, Counters, Kernels, Mentioned};
use crate::domain_stats::TraceStats;
use crate::error::FormatError;
use crate::facts::{grid_threads, kernel_facts, KernelFacts};
use crate::name_stats::NameTally;
use crate::records::DispatchRecord;
use crate::run::ProcessRun;
use crate::stats::{KernelDurations, KERNEL_DISPATCH_DOMAIN};
use std::cell::RefCell;
use std::path::Path;

/// One process and the ids its records are written with.
pub(super) struct Process<'a> {
    run: &'a ProcessRun,
    pub(super) agents: Agents<'a>,
    pub(super) counters: Counters<'a>,
    pub(super) kernels: Kernels<'a>,
    /// The document is of a kernel-replay run: every record carries `replay_pass`.
    replay: bool,
    /// The dispatch durations counted as the kernel-dispatch records are written.
    durations: RefCell<KernelDurations>,
}

impl<'a> Process<'a> {
    /// The process, after one pass over its dispatches for what they mention; the statistics'
    /// names spill into `spill_dir` if they are many.
    pub(super) fn new(
        run: &'a ProcessRun,
        replay: bool,
        spill_dir: &Path,
    ) -> Result<Process<'a>, FormatError> {
        let mentioned = Mentioned::scan(run)?;
        Ok(Process {
            run,
            agents: Agents::new(run, &mentioned),
            counters: Counters::new(run, &mentioned),
            kernels: Kernels::new(run, &mentioned),
            replay,
            durations: RefCell::new(KernelDurations::new(Some(spill_dir))),
        })
    }

    /// `replay_pass` of a record: the pass (0 for a dispatch that ran once) in a kernel-replay
    /// run, nothing otherwise.
    fn replay_pass(&self, dispatch: &DispatchRecord) -> Option<u32> {
        self.replay.then(|| dispatch.replay_pass.unwrap_or(0))
    }

    fn dispatch_info(&self, dispatch: &DispatchRecord, facts: &KernelFacts) -> DispatchInfo {
        DispatchInfo {
            size: SIZE_DISPATCH_INFO,
            agent_id: Handle {
                handle: self.agents.handle(dispatch.agent_id),
            },
            queue_id: Handle {
                handle: dispatch.stream_id,
            },
            kernel_id: self.kernels.slot(dispatch.kernel_id),
            dispatch_id: dispatch.dispatch_id,
            private_segment_size: facts.scratch_size,
            group_segment_size: facts.lds_block_size,
            workgroup_size: dispatch.block.map(u64::from).into(),
            grid_size: grid_threads(dispatch).into(),
        }
    }

    /// A pass's `buffer_records.kernel_dispatch` record and, when the pass collected counters,
    /// its `callback_records.counter_collection` record, written into `counters` (its list of
    /// values reused from pass to pass); says whether it did. Both share one dispatch info.
    pub(super) fn pass_records(
        &self,
        dispatch: &DispatchRecord,
        counters: &mut CounterRecord,
    ) -> (KernelDispatch, bool) {
        self.durations.borrow_mut().add(&self.run.process, dispatch);
        let facts = kernel_facts(self.run, dispatch);
        let dispatch_info = self.dispatch_info(dispatch, &facts);
        let record = KernelDispatch {
            size: SIZE_KERNEL_DISPATCH_RECORD,
            kind: BUFFER_TRACING_KERNEL_DISPATCH,
            operation: KERNEL_DISPATCH_COMPLETE,
            thread_id: dispatch.tid,
            correlation_id: correlation(dispatch),
            start_timestamp: dispatch.start_ns,
            end_timestamp: dispatch.end_ns,
            dispatch_info,
            stream_id: Handle {
                handle: dispatch.stream_id,
            },
            replay_pass: self.replay_pass(dispatch),
            kernel_rename: self
                .run
                .process
                .kernel_rename
                .then(|| dispatch.innermost_range().map(str::to_string))
                .flatten(),
            ranges: dispatch.ranges.clone(),
        };
        if dispatch.counters.is_empty() {
            return (record, false);
        }
        let agent_handle = dispatch_info.agent_id.handle;
        let mut values = std::mem::take(&mut counters.records);
        values.clear();
        values.extend(dispatch.counters.iter().map(|sample| CounterValue {
            counter_id: Handle {
                handle: self.counters.handle_of(agent_handle, sample.name),
            },
            value: sample.value,
        }));
        *counters = CounterRecord {
            dispatch_data: DispatchData {
                size: SIZE_DISPATCH_DATA,
                correlation_id: record.correlation_id,
                start_timestamp: dispatch.start_ns,
                end_timestamp: dispatch.end_ns,
                dispatch_info,
            },
            records: values,
            thread_id: dispatch.tid,
            stream_id: record.stream_id,
            arch_vgpr_count: facts.vgpr_count,
            accum_vgpr_count: 0,
            sgpr_count: 0,
            lds_block_size_v: facts.lds_block_size,
            replay_pass: record.replay_pass,
        };
        (record, true)
    }

    /// `summary`: the kernel-dispatch statistics, each dispatch counted once
    /// ([`crate::stats::each_dispatch_counted_once`]), as [`Self::pass_records`] counted
    /// them (the document writes every kernel-dispatch record before its summary), then each
    /// tracing domain's with records, as rocprofv3's JSON lists its domains
    /// (`traces`, gathered as [`super::trace_json::Traces`] read them).
    /// Names spill into `spill_dir` if they are many ([`NameTally`]).
    pub(super) fn summary(
        &self,
        traces: TraceStats,
        spill_dir: &Path,
    ) -> std::io::Result<Vec<DomainStats>> {
        let mut operations = NameTally::new(Some(spill_dir));
        (self.durations.take()).add_by_name(self.run, &mut operations)?;
        let kernels = (KERNEL_DISPATCH_DOMAIN, operations.finish()?);
        Ok(std::iter::once(kernels)
            .chain(traces.domains()?)
            .filter(|(_, operations)| !operations.is_empty())
            .map(|(domain, operations)| DomainStats { domain, operations })
            .collect())
    }
}

/// rocprofiler's correlation id: kreplay's (the launch's), no external id, no ancestor (0:
/// kreplay traces no API call a launch could descend from).
fn correlation(dispatch: &DispatchRecord) -> Correlation {
    Correlation {
        internal: dispatch.correlation_id,
        external: 0,
        ancestor: 0,
    }
}
