//! The marker domain (`--marker-trace`): the application's NVTX-style ranges and marks, kept per
//! process. Both devices reach it through one entry point, [`crate::Engine::marker`]: the CUDA
//! backend from CUPTI's NVTX callbacks, the reference device from its runtime's calls.
//!
//! Push/pop ranges nest per thread and per domain; start/end ranges are keyed by the id the
//! caller has for them (NVTX's `nvtxRangeId_t`, or the one [`Markers::call`] returned) and may
//! end on another thread. A range becomes a [`MarkerRecord`] when it ends, a mark when it is made.
//! The push/pop ranges open on a thread are its *range stack*, which every dispatch it launches
//! carries ([`Markers::stack`]). Ranges still open when the process ends are not recorded.

use crate::filter::nvtx::{NvtxFilter, NvtxState};
use kreplay_format::{MarkerKind, MarkerRecord};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// What the range or mark says, as the call gave it (registered strings resolved by the
/// caller).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MarkerText<'a> {
    /// The call as NVTX names it (`nvtxRangePushA`, `nvtxDomainMarkEx`, ...).
    pub operation: &'a str,
    /// The domain's name; empty for the default domain.
    pub domain: &'a str,
    pub message: &'a str,
    pub category: u32,
}

/// One marker call of the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerCall<'a> {
    /// Opens a push/pop range on the calling thread.
    Push(MarkerText<'a>),
    /// Closes the calling thread's innermost push/pop range of `domain`.
    Pop { domain: &'a str },
    /// Opens a start/end range; `key` is the caller's id for it (None: the tracker gives one,
    /// returned by [`Markers::call`]).
    Start {
        text: MarkerText<'a>,
        key: Option<u64>,
    },
    /// Closes the start/end range of `key`, on any thread.
    End { key: u64 },
    /// A point in time.
    Mark(MarkerText<'a>),
}

/// An open range.
struct Open {
    id: u64,
    operation: String,
    domain: String,
    message: String,
    category: u32,
    tid: u64,
    start_ns: u64,
}

impl Open {
    fn new(id: u64, text: &MarkerText<'_>, tid: u64, start_ns: u64) -> Open {
        Open {
            id,
            operation: text.operation.to_string(),
            domain: text.domain.to_string(),
            message: text.message.to_string(),
            category: text.category,
            tid,
            start_ns,
        }
    }

    fn record(self, kind: MarkerKind, pid: u32, end_ns: u64) -> MarkerRecord {
        MarkerRecord {
            id: self.id,
            kind,
            operation: self.operation,
            domain: self.domain,
            message: self.message,
            category: self.category,
            pid,
            tid: self.tid,
            start_ns: self.start_ns,
            end_ns: end_ns.max(self.start_ns),
        }
    }

    /// The range as a dispatch's stack shows it: `message`, or `domain@message` outside the
    /// default domain (Nsight Compute's NVTX filter syntax).
    fn stack_entry(&self) -> String {
        if self.domain.is_empty() {
            self.message.clone()
        } else {
            format!("{}@{}", self.domain, self.message)
        }
    }
}

/// The process's open ranges. Off (every call ignored, every stack empty) unless the run asked
/// for `--marker-trace` (`recording`: ranges and marks become records, dispatches carry their
/// stack) or for NVTX filters (ranges followed for the filters only).
pub struct Markers {
    enabled: bool,
    recording: bool,
    pid: u32,
    last_id: AtomicU64,
    /// Thread id → its open push/pop ranges, outermost first.
    stacks: Mutex<HashMap<u64, Vec<Open>>>,
    /// Key → open start/end range.
    started: Mutex<HashMap<u64, Open>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Markers {
    /// `enabled`: ranges are followed; `recording`: and recorded (implies `enabled`).
    pub fn new(enabled: bool, recording: bool, pid: u32) -> Markers {
        Markers {
            enabled: enabled || recording,
            recording,
            pid,
            last_id: AtomicU64::new(0),
            stacks: Mutex::default(),
            started: Mutex::default(),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether ranges and marks are recorded (`--marker-trace`).
    pub fn recording(&self) -> bool {
        self.recording
    }

    fn next_id(&self) -> u64 {
        self.last_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Applies `call` of thread `tid` at `now_ns`; returns the record it completes (a popped or
    /// ended range, a mark; none unless recording) and, for a start, the range's key.
    pub fn call(
        &self,
        call: MarkerCall<'_>,
        tid: u64,
        now_ns: u64,
    ) -> (Option<MarkerRecord>, Option<u64>) {
        if !self.enabled {
            return (None, None);
        }
        let (record, key) = self.apply(call, tid, now_ns);
        (record.filter(|_| self.recording), key)
    }

    fn apply(
        &self,
        call: MarkerCall<'_>,
        tid: u64,
        now_ns: u64,
    ) -> (Option<MarkerRecord>, Option<u64>) {
        match call {
            MarkerCall::Push(text) => {
                let open = Open::new(self.next_id(), &text, tid, now_ns);
                lock(&self.stacks).entry(tid).or_default().push(open);
                (None, None)
            }
            MarkerCall::Pop { domain } => {
                let mut stacks = lock(&self.stacks);
                let Some(stack) = stacks.get_mut(&tid) else {
                    return (None, None);
                };
                // A pop without a push of its domain (unbalanced) closes nothing.
                let Some(at) = stack.iter().rposition(|o| o.domain == domain) else {
                    return (None, None);
                };
                let open = stack.remove(at);
                if stack.is_empty() {
                    stacks.remove(&tid);
                }
                (
                    Some(open.record(MarkerKind::PushPop, self.pid, now_ns)),
                    None,
                )
            }
            MarkerCall::Start { text, key } => {
                let id = self.next_id();
                let key = key.unwrap_or(id);
                lock(&self.started).insert(key, Open::new(id, &text, tid, now_ns));
                (None, Some(key))
            }
            MarkerCall::End { key } => {
                let open = lock(&self.started).remove(&key);
                (
                    open.map(|o| o.record(MarkerKind::StartEnd, self.pid, now_ns)),
                    None,
                )
            }
            MarkerCall::Mark(text) => {
                let open = Open::new(self.next_id(), &text, tid, now_ns);
                (Some(open.record(MarkerKind::Mark, self.pid, now_ns)), None)
            }
        }
    }

    /// Thread `tid`'s open push/pop ranges, outermost first, as a dispatch carries them (empty
    /// unless recording).
    pub fn stack(&self, tid: u64) -> Vec<String> {
        if !self.recording {
            return Vec::new();
        }
        lock(&self.stacks)
            .get(&tid)
            .map(|stack| stack.iter().map(Open::stack_entry).collect())
            .unwrap_or_default()
    }

    /// Whether `filter` admits a launch of thread `tid` now: its push/pop ranges and the
    /// process's open start/end ranges, as (domain, message).
    pub fn admits(&self, tid: u64, filter: &NvtxFilter) -> bool {
        // The two locks in this order here only; every other use takes one at a time.
        let stacks = lock(&self.stacks);
        let started = lock(&self.started);
        let push_pop: Vec<(&str, &str)> = stacks
            .get(&tid)
            .map(|stack| {
                stack
                    .iter()
                    .map(|o| (o.domain.as_str(), o.message.as_str()))
                    .collect()
            })
            .unwrap_or_default();
        let start_end: Vec<(&str, &str)> = started
            .values()
            .map(|o| (o.domain.as_str(), o.message.as_str()))
            .collect();
        filter.admits(&NvtxState {
            push_pop: &push_pop,
            start_end: &start_end,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(message: &str) -> MarkerText<'_> {
        MarkerText {
            operation: "nvtxRangePushA",
            domain: "",
            message,
            category: 0,
        }
    }

    #[test]
    fn push_pop_nests_per_thread_and_the_stack_shows_it() {
        let markers = Markers::new(true, true, 7);
        markers.call(MarkerCall::Push(text("step")), 1, 10);
        markers.call(MarkerCall::Push(text("forward")), 1, 20);
        markers.call(MarkerCall::Push(text("other thread")), 2, 25);
        let io = MarkerText {
            domain: "io",
            ..text("read")
        };
        markers.call(MarkerCall::Push(io), 1, 26);
        assert_eq!(markers.stack(1), ["step", "forward", "io@read"]);
        assert_eq!(markers.stack(2), ["other thread"]);
        // A pop of the default domain closes the innermost default-domain range.
        let (popped, _) = markers.call(MarkerCall::Pop { domain: "" }, 1, 30);
        let popped = popped.unwrap();
        assert_eq!(
            (popped.message.as_str(), popped.start_ns, popped.end_ns),
            ("forward", 20, 30)
        );
        assert_eq!(
            (popped.kind, popped.pid, popped.tid),
            (MarkerKind::PushPop, 7, 1)
        );
        assert_eq!(markers.stack(1), ["step", "io@read"]);
        markers.call(MarkerCall::Pop { domain: "io" }, 1, 31);
        let (outer, _) = markers.call(MarkerCall::Pop { domain: "" }, 1, 40);
        assert_eq!(outer.unwrap().id, 1);
        assert!(markers.stack(1).is_empty());
        // Unbalanced: nothing to close.
        assert_eq!(
            markers.call(MarkerCall::Pop { domain: "" }, 1, 50),
            (None, None)
        );
    }

    #[test]
    fn start_end_ranges_end_on_any_thread_by_key_and_marks_are_points() {
        let markers = Markers::new(true, true, 7);
        let (_, key) = markers.call(
            MarkerCall::Start {
                text: text("load"),
                key: None,
            },
            1,
            100,
        );
        let (_, given) = markers.call(
            MarkerCall::Start {
                text: text("io"),
                key: Some(99),
            },
            1,
            110,
        );
        assert_eq!(given, Some(99));
        let (ended, _) = markers.call(MarkerCall::End { key: key.unwrap() }, 2, 150);
        let ended = ended.unwrap();
        assert_eq!(
            (ended.kind, ended.tid, ended.start_ns, ended.end_ns),
            (MarkerKind::StartEnd, 1, 100, 150)
        );
        assert!(
            markers.stack(1).is_empty(),
            "start/end ranges are not on the stack"
        );
        let (mark, _) = markers.call(MarkerCall::Mark(text("here")), 3, 200);
        let mark = mark.unwrap();
        assert_eq!(
            (mark.kind, mark.start_ns, mark.end_ns),
            (MarkerKind::Mark, 200, 200)
        );
        assert_eq!(
            markers.call(MarkerCall::End { key: 12345 }, 1, 300),
            (None, None)
        );
    }

    #[test]
    fn off_records_nothing() {
        let markers = Markers::new(false, false, 7);
        markers.call(MarkerCall::Push(text("step")), 1, 10);
        assert!(markers.stack(1).is_empty());
        assert_eq!(
            markers.call(MarkerCall::Mark(text("here")), 1, 20),
            (None, None)
        );
    }
}
