//! What the engine sends to the record sink: the process, its devices, code objects, kernels and
//! counters once each, and every dispatch's result.

use super::*;
use crate::engine::sys::lock;
use crate::engine::tickets::Dispatch;
use kreplay_format::CodeObject;

impl<K: Backend> Engine<K> {
    /// Sends the process record (first record of a run).
    pub fn record_process(&self, process: ProcessInfo) {
        self.sink.send(Record::Process(process));
    }

    /// Records a device once per process.
    pub fn register_agent(&self, agent: AgentInfo) {
        if lock(&self.agents).insert(agent.agent_id) {
            self.sink.send(Record::Agent(agent));
        }
    }

    /// Records a code object (a module loaded onto a device) once per process.
    pub fn register_code_object(&self, object: CodeObject) {
        if lock(&self.code_objects).insert(object.code_object_id) {
            self.sink.send(Record::CodeObject(object));
        }
    }

    /// Records a kernel once per process; its demangled name is what the filters match.
    pub fn register_kernel(&self, symbol: KernelSymbol) {
        let mut names = self.kernel_names.write().unwrap_or_else(|e| e.into_inner());
        if names.contains_key(&symbol.kernel_id) {
            return;
        }
        names.insert(symbol.kernel_id, symbol.demangled_name.as_str().into());
        drop(names);
        self.sink.send(Record::KernelSymbol(symbol));
    }

    /// Records the run's counters, each name once per process.
    pub fn register_counters(&self, counters: impl IntoIterator<Item = CounterInfo>) {
        let mut known = lock(&self.counters);
        for counter in counters {
            if known.insert(counter.name.clone()) {
                self.sink.send(Record::Counter(counter));
            }
        }
    }

    pub(super) fn send_dispatch(
        &self,
        dispatch: &Dispatch,
        replay_pass: Option<u32>,
        result: PassResult,
    ) {
        let info = &dispatch.info;
        self.sink.send(Record::Dispatch(DispatchRecord {
            dispatch_id: dispatch.dispatch_id,
            replay_pass,
            correlation_id: info.correlation_id,
            agent_id: u64::from(info.device),
            stream_id: info.stream_id,
            pid: self.pid,
            tid: dispatch.tid,
            kernel_id: info.kernel_id,
            grid: info.grid,
            block: info.block,
            dynamic_shared_bytes: info.dynamic_shared_bytes,
            start_ns: result.start_ns,
            end_ns: result.end_ns,
            counters: result.counters,
            ranges: dispatch.ranges.clone(),
        }));
    }
}

pub(super) fn pass_result(timing: Timing, counters: Vec<CounterSample>) -> PassResult {
    PassResult {
        counters,
        start_ns: timing.start_ns,
        end_ns: timing.end_ns,
    }
}
