//! Everything a run recorded, as read back from its databases (`crate::db::read_databases`) or
//! built straight from records.

use crate::error::FormatError;
use crate::identity::guid_for;
use crate::records::*;

mod ranges;
pub(crate) use ranges::READERS;
mod source;
mod traces;
mod watch;

pub use source::{IdRanges, Page, RecordSource, Records, Source, Stored};
pub use traces::{TraceCursor, TraceKind, TraceSource};
pub use watch::{RecordObserver, Watch, Watcher};

/// What one profiled process recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessRun {
    pub process: ProcessInfo,
    pub agents: Vec<AgentInfo>,
    /// The modules it loaded, which `kernels` name by `code_object_id`.
    pub code_objects: Vec<CodeObject>,
    pub kernels: Vec<KernelSymbol>,
    pub counters: Vec<CounterInfo>,
    /// One record per pass of every dispatch, in the order they were recorded.
    pub dispatches: Vec<DispatchRecord>,
    pub costs: Vec<ReplayCost>,
    pub warnings: Vec<Warning>,
    /// Where the dispatches and costs not in the lists above are read from, after them (a
    /// database opened with `crate::db::open_databases`): the writers read them a page at a time.
    pub stored: Option<Source>,
    /// Marker ranges and marks (`--marker-trace`), in the order they were recorded.
    pub markers: Vec<crate::markers::MarkerRecord>,
    /// CUDA API calls (`--runtime-trace`, `--sys-trace`), in the order they returned.
    pub api_calls: Vec<crate::api::ApiRecord>,
    /// Copies (`--memory-copy-trace`) and allocations (`--memory-allocation-trace`) of the
    /// application, in the order they were recorded.
    pub copies: Vec<crate::memory::MemoryCopyRecord>,
    pub allocations: Vec<crate::memory::MemoryAllocationRecord>,
    /// The observer its dispatches and costs are handed to as they are read ([`RunData::watch`]).
    pub watch: Option<Watch>,
}

impl ProcessRun {
    pub fn new(process: ProcessInfo) -> ProcessRun {
        ProcessRun {
            process,
            agents: Vec::new(),
            code_objects: Vec::new(),
            kernels: Vec::new(),
            counters: Vec::new(),
            dispatches: Vec::new(),
            costs: Vec::new(),
            warnings: Vec::new(),
            stored: None,
            markers: Vec::new(),
            api_calls: Vec::new(),
            copies: Vec::new(),
            allocations: Vec::new(),
            watch: None,
        }
    }

    /// Every dispatch pass, in the order recorded: those in memory, then the stored ones.
    pub fn each_dispatch(&self) -> Records<'_, DispatchRecord> {
        Records::new(
            &self.dispatches,
            self.stored.as_ref().map(|s| {
                ranges::pages(
                    s,
                    Stored::Passes,
                    |s, ids, reader, last| s.dispatches_in(ids, reader, last),
                    |s, after| s.dispatches_after(after),
                )
            }),
            self.watch.clone(),
        )
    }

    /// Every replay cost, in the order recorded: those in memory, then the stored ones.
    pub fn each_cost(&self) -> Records<'_, ReplayCost> {
        Records::new(
            &self.costs,
            self.stored.as_ref().map(|s| {
                ranges::pages(
                    s,
                    Stored::Costs,
                    |s, ids, reader, last| s.costs_in(ids, reader, last),
                    |s, after| s.costs_after(after),
                )
            }),
            self.watch.clone(),
        )
    }

    /// How many dispatch passes the process recorded.
    pub fn dispatch_count(&self) -> usize {
        self.dispatches.len() + self.stored.as_ref().map_or(0, |s| s.0.counts().0)
    }

    /// Whether every agent, kernel and counter the dispatches mention is described in
    /// `agents`, `kernels` and `counters` (known without reading the records only for a stored
    /// process, whose database says so).
    pub fn mentions_only_described(&self) -> bool {
        match &self.stored {
            _ if !self.dispatches.is_empty() => false,
            Some(source) => source.0.mentions_only_described(),
            None => true,
        }
    }

    /// How many records of each tracing kind the process recorded (in [`TraceKind::ALL`]'s
    /// order), where that is known without reading them.
    pub fn trace_counts(&self) -> Option<[usize; 4]> {
        let stored = match &self.stored {
            Some(source) => source.0.trace_counts()?,
            None => [0; 4],
        };
        let in_memory = [
            self.markers.len(),
            self.api_calls.len(),
            self.copies.len(),
            self.allocations.len(),
        ];
        Some(std::array::from_fn(|kind| stored[kind] + in_memory[kind]))
    }

    /// How many replay costs the process recorded.
    pub fn cost_count(&self) -> usize {
        self.costs.len() + self.stored.as_ref().map_or(0, |s| s.0.counts().1)
    }

    /// The process with every record in memory: itself, or a copy with its stored records read.
    pub fn in_memory(&self) -> Result<std::borrow::Cow<'_, ProcessRun>, FormatError> {
        match self.stored {
            None => Ok(std::borrow::Cow::Borrowed(self)),
            Some(_) => Ok(std::borrow::Cow::Owned(self.clone().loaded()?)),
        }
    }

    /// The process with its stored records read into memory.
    pub fn loaded(mut self) -> Result<ProcessRun, FormatError> {
        let mut dispatches = Vec::new();
        let mut costs = Vec::new();
        for dispatch in self.each_dispatch() {
            dispatches.push(dispatch?.into_owned());
        }
        for cost in self.each_cost() {
            costs.push(cost?.into_owned());
        }
        let markers = all(self.each_marker())?;
        let api_calls = all(self.each_api_call())?;
        let copies = all(self.each_copy())?;
        let allocations = all(self.each_allocation())?;
        self.dispatches = dispatches;
        self.costs = costs;
        self.markers = markers;
        self.api_calls = api_calls;
        self.copies = copies;
        self.allocations = allocations;
        self.stored = None;
        Ok(self)
    }

    /// The kernel symbol a dispatch ran, if the producer described it.
    pub fn kernel(&self, kernel_id: u64) -> Option<&KernelSymbol> {
        self.kernels.iter().find(|k| k.kernel_id == kernel_id)
    }

    /// A digest of everything the process holds but its stored records, less what a copy of its
    /// database's rows can be given afterwards (`db::bulk`: the sections and `--kernel-rename`
    /// of the process row, the counters' descriptions and units): equal digests, equal contents
    /// but for those.
    pub(crate) fn fingerprint(&self) -> u64 {
        use std::hash::Hasher;
        struct Digest(std::collections::hash_map::DefaultHasher);
        impl std::fmt::Write for Digest {
            fn write_str(&mut self, text: &str) -> std::fmt::Result {
                self.0.write(text.as_bytes());
                Ok(())
            }
        }
        let mut digest = Digest(Default::default());
        let process = ProcessInfo {
            sections: Vec::new(),
            kernel_rename: false,
            ..self.process.clone()
        };
        let counters: Vec<(&str, &str)> = (self.counters.iter())
            .map(|c| (c.name.as_str(), c.metric.as_str()))
            .collect();
        let fields = (
            &process,
            &self.agents,
            &self.code_objects,
            &self.kernels,
            &counters,
            &self.dispatches,
            &self.costs,
            &self.warnings,
            (
                &self.markers,
                &self.api_calls,
                &self.copies,
                &self.allocations,
            ),
        );
        std::fmt::write(&mut digest, format_args!("{fields:?}")).expect("a digest takes any text");
        digest.0.finish()
    }

    /// The stable identity of this process in databases (derived from host, pid and start time).
    pub fn guid(&self) -> String {
        guid_for(&self.process)
    }
}

/// Every record `records` yields, owned.
fn all<'a, T: Clone + 'a>(
    records: impl Iterator<Item = Result<std::borrow::Cow<'a, T>, FormatError>>,
) -> Result<Vec<T>, FormatError> {
    records
        .map(|r| r.map(std::borrow::Cow::into_owned))
        .collect()
}

/// Every process of a run (several when databases are merged, or the app started children).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunData {
    pub processes: Vec<ProcessRun>,
}

impl RunData {
    /// Whether the run used kernel replay (some record has a replay pass): its outputs then give
    /// every record a pass, 0 for a dispatch that ran once.
    pub fn is_kernel_replay(&self) -> bool {
        self.processes.iter().any(|p| {
            p.each_dispatch()
                .any(|d| d.is_ok_and(|d| d.replay_pass.is_some()))
        })
    }

    /// The run with every record in memory: itself, or a copy with the stored records read.
    pub fn in_memory(&self) -> Result<std::borrow::Cow<'_, RunData>, FormatError> {
        if self.processes.iter().all(|p| p.stored.is_none()) {
            return Ok(std::borrow::Cow::Borrowed(self));
        }
        let processes = self
            .processes
            .iter()
            .map(|p| p.clone().loaded())
            .collect::<Result<_, _>>()?;
        Ok(std::borrow::Cow::Owned(RunData { processes }))
    }

    /// Builds the run a producer would have written: each `Process` record starts a process;
    /// records before the first one are kept under a process with pid 0.
    pub fn from_records(records: impl IntoIterator<Item = Record>) -> RunData {
        let records: Vec<Record> = records.into_iter().collect();
        let mut processes: Vec<ProcessRun> = Vec::new();
        for record in records.iter().cloned() {
            if let Record::Process(process) = record {
                processes.push(ProcessRun::new(process));
                continue;
            }
            if processes.is_empty() {
                processes.push(ProcessRun::new(unnamed_process(&records)));
            }
            let run = processes.last_mut().expect("pushed above");
            match record {
                Record::Process(_) => unreachable!("handled above"),
                Record::Agent(agent) => {
                    match run.agents.iter_mut().find(|a| a.agent_id == agent.agent_id) {
                        Some(known) => *known = agent,
                        None => run.agents.push(agent),
                    }
                }
                Record::CodeObject(object) => {
                    match run
                        .code_objects
                        .iter_mut()
                        .find(|c| c.code_object_id == object.code_object_id)
                    {
                        Some(known) => *known = object,
                        None => run.code_objects.push(object),
                    }
                }
                Record::KernelSymbol(symbol) => {
                    match run
                        .kernels
                        .iter_mut()
                        .find(|k| k.kernel_id == symbol.kernel_id)
                    {
                        Some(known) => *known = symbol,
                        None => run.kernels.push(symbol),
                    }
                }
                Record::Counter(counter) => {
                    match run.counters.iter_mut().find(|c| c.name == counter.name) {
                        Some(known) => *known = counter,
                        None => run.counters.push(counter),
                    }
                }
                Record::Dispatch(dispatch) => run.dispatches.push(dispatch),
                Record::ReplayCost(cost) => run.costs.push(cost),
                Record::Warning(warning) => run.warnings.push(warning),
                Record::Marker(marker) => run.markers.push(marker),
                Record::Api(call) => run.api_calls.push(call),
                Record::MemoryCopy(copy) => run.copies.push(copy),
                Record::MemoryAllocation(allocation) => run.allocations.push(allocation),
                Record::ProcessEnd { end_ns } => run.process.end_ns = end_ns,
            }
        }
        RunData { processes }
    }

    /// The records that rebuild this run (what a producer would send), process by process; a
    /// stored record that cannot be read panics ([`Self::each_record`] says why instead).
    pub fn to_records(&self) -> Vec<Record> {
        self.each_record()
            .map(|r| r.expect("records held in memory"))
            .collect()
    }

    /// The records that rebuild this run, process by process, read as they are asked for (the
    /// stored ones a page at a time).
    pub fn each_record(&self) -> impl Iterator<Item = Result<Record, FormatError>> + '_ {
        self.processes.iter().flat_map(|run| {
            let described = std::iter::once(Record::Process(run.process.clone()))
                .chain(run.agents.iter().cloned().map(Record::Agent))
                .chain(run.code_objects.iter().cloned().map(Record::CodeObject))
                .chain(run.kernels.iter().cloned().map(Record::KernelSymbol))
                .chain(run.counters.iter().cloned().map(Record::Counter))
                .map(Ok);
            let dispatches = run
                .each_dispatch()
                .map(|d| d.map(|d| Record::Dispatch(d.into_owned())));
            let costs = run
                .each_cost()
                .map(|c| c.map(|c| Record::ReplayCost(c.into_owned())));
            let warnings = (run.warnings.iter().cloned().map(Record::Warning)).map(Ok);
            let traced = (run
                .each_marker()
                .map(|m| m.map(|m| Record::Marker(m.into_owned()))))
            .chain(
                run.each_api_call()
                    .map(|c| c.map(|c| Record::Api(c.into_owned()))),
            )
            .chain((run.each_copy()).map(|c| c.map(|c| Record::MemoryCopy(c.into_owned()))))
            .chain(
                (run.each_allocation())
                    .map(|a| a.map(|a| Record::MemoryAllocation(a.into_owned()))),
            );
            described
                .chain(dispatches)
                .chain(costs)
                .chain(warnings)
                .chain(traced)
        })
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_ranges;
