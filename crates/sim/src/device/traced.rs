//! Launches timed without waiting (`--kernel-trace` without counters), as the CUDA backend
//! times them with a pair of events read later: the device completes a traced launch once a
//! later one is issued, or when the engine waits for it (the end of the process), so that the
//! engine's records arrive late here as they do on a GPU.

use super::*;
use std::collections::{HashMap, VecDeque};
use std::thread::ThreadId;

#[derive(Debug, Default)]
pub(crate) struct Traced {
    next_tag: u64,
    /// Each thread's launch between `trace_starts` and `trace_ends`, with what it executed.
    open: HashMap<ThreadId, (u64, Option<Range>)>,
    /// Issued launches and their times, oldest first.
    issued: VecDeque<(u64, Timing)>,
}

impl SimDevice {
    pub(super) fn traced_starts(&mut self) -> u64 {
        self.traced.next_tag += 1;
        let tag = self.traced.next_tag;
        self.traced.open.insert(thread::current().id(), (tag, None));
        tag
    }

    /// What a launch executed on this thread while it is traced (see [`SimDevice::execute`]).
    pub(super) fn traced_executed(&mut self, start_ns: u64, end_ns: u64) {
        if let Some((_, range)) = self.traced.open.get_mut(&thread::current().id()) {
            let range = range.get_or_insert(Range {
                stats: ExecStats::default(),
                start_ns,
                end_ns,
            });
            range.end_ns = end_ns;
        }
    }

    pub(super) fn traced_ends(&mut self, tag: u64) -> Result<(), BackendError> {
        match self.traced.open.remove(&thread::current().id()) {
            Some((open, Some(range))) if open == tag => {
                self.traced.issued.push_back((
                    tag,
                    Timing {
                        start_ns: range.start_ns,
                        end_ns: range.end_ns,
                    },
                ));
                Ok(())
            }
            Some((open, None)) if open == tag => Err(BackendError::Failed(
                "a traced launch that executed nothing".into(),
            )),
            _ => Err(BackendError::Failed(format!(
                "trace_ends for launch {tag}, which this thread did not start"
            ))),
        }
    }

    pub(super) fn traced_abandoned(&mut self, tag: u64) {
        let me = thread::current().id();
        if self
            .traced
            .open
            .get(&me)
            .is_some_and(|(open, _)| *open == tag)
        {
            self.traced.open.remove(&me);
        }
    }

    /// Every issued launch but the last has completed; waiting completes as many as asked.
    pub(super) fn traced_completed(&mut self, at_least: usize) -> Vec<(u64, Timing)> {
        let issued = self.traced.issued.len();
        let ready = issued.saturating_sub(1).max(at_least.min(issued));
        self.traced.issued.drain(..ready).collect()
    }
}
