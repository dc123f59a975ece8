//! Everything a run recorded, as read back from its databases (`crate::db::read_databases`) or
//! built straight from records.

use crate::identity::guid_for;
use crate::records::*;

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
    /// Marker ranges and marks (`--marker-trace`), in the order they were recorded.
    pub markers: Vec<crate::markers::MarkerRecord>,
    /// CUDA API calls (`--runtime-trace`, `--sys-trace`), in the order they returned.
    pub api_calls: Vec<crate::api::ApiRecord>,
    /// Copies (`--memory-copy-trace`) and allocations (`--memory-allocation-trace`) of the
    /// application, in the order they were recorded.
    pub copies: Vec<crate::memory::MemoryCopyRecord>,
    pub allocations: Vec<crate::memory::MemoryAllocationRecord>,
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
            markers: Vec::new(),
            api_calls: Vec::new(),
            copies: Vec::new(),
            allocations: Vec::new(),
        }
    }

    /// The kernel symbol a dispatch ran, if the producer described it.
    pub fn kernel(&self, kernel_id: u64) -> Option<&KernelSymbol> {
        self.kernels.iter().find(|k| k.kernel_id == kernel_id)
    }

    /// The stable identity of this process in databases (derived from host, pid and start time).
    pub fn guid(&self) -> String {
        guid_for(&self.process)
    }
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
        self.processes
            .iter()
            .flat_map(|p| &p.dispatches)
            .any(|d| d.replay_pass.is_some())
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

    /// The records that rebuild this run (what a producer would send), process by process.
    pub fn to_records(&self) -> Vec<Record> {
        let mut records = Vec::new();
        for run in &self.processes {
            records.push(Record::Process(run.process.clone()));
            records.extend(run.agents.iter().cloned().map(Record::Agent));
            records.extend(run.code_objects.iter().cloned().map(Record::CodeObject));
            records.extend(run.kernels.iter().cloned().map(Record::KernelSymbol));
            records.extend(run.counters.iter().cloned().map(Record::Counter));
            records.extend(run.dispatches.iter().cloned().map(Record::Dispatch));
            records.extend(run.costs.iter().cloned().map(Record::ReplayCost));
            records.extend(run.warnings.iter().cloned().map(Record::Warning));
            records.extend(run.markers.iter().cloned().map(Record::Marker));
            records.extend(run.api_calls.iter().cloned().map(Record::Api));
            records.extend(run.copies.iter().cloned().map(Record::MemoryCopy));
            records.extend(
                run.allocations
                    .iter()
                    .cloned()
                    .map(Record::MemoryAllocation),
            );
        }
        records
    }
}

#[cfg(test)]
mod tests;
