//! Pass-loop tests against a backend that logs every call and models memory as one counter
//! that each execution increments (so a missing or extra restore shows in the final value).
//!
//! The fake backend is `mock`; this file holds the record sink, the engine harness and the
//! helpers the topic files share, one file per topic beside it.

use super::*;
use crate::backend::{AllocKind, Measurement, Memory, PassCounters, Region, Relaunch, UnitPlan};
use crate::config::{CounterGroup, CounterSpec, InProcessMode, KernelFilter};
use crate::notice::SilentLogger;
use kreplay_format::{CounterSample, Warning};
use mock::*;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

mod api_trace;
mod declines;
mod faults;
mod fences;
mod launch_cost;
mod lifecycle;
mod markers;
mod memory_trace;
mod mock;
mod passes;
mod policy;
mod selection;
mod stay_open;
mod window_threads;
mod windows;

#[derive(Default)]
struct MemorySink {
    records: Mutex<Vec<Record>>,
    flushes: AtomicUsize,
    closes: AtomicUsize,
}

impl RecordSink for MemorySink {
    fn send(&self, record: Record) {
        self.records.lock().unwrap().push(record);
    }
    fn flush(&self) {
        self.flushes.fetch_add(1, Ordering::SeqCst);
    }
    fn close(&self) {
        self.closes.fetch_add(1, Ordering::SeqCst);
    }
}

impl MemorySink {
    fn dispatches(&self) -> Vec<DispatchRecord> {
        self.records
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| match r {
                Record::Dispatch(d) => Some(d.clone()),
                _ => None,
            })
            .collect()
    }
    fn costs(&self) -> Vec<ReplayCost> {
        self.records
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| match r {
                Record::ReplayCost(c) => Some(c.clone()),
                _ => None,
            })
            .collect()
    }
    fn warnings(&self) -> Vec<String> {
        self.records
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| match r {
                Record::Warning(Warning { message }) => Some(message.clone()),
                _ => None,
            })
            .collect()
    }
}

/// What the abort action saw: the message and how many closes of the sink had happened by then.
type Aborts = Arc<Mutex<Vec<(String, usize)>>>;

struct Harness {
    engine: Engine<MockBackend>,
    sink: Arc<MemorySink>,
    aborts: Aborts,
}

fn groups(n: usize) -> Vec<CounterGroup> {
    (0..n)
        .map(|g| CounterGroup {
            counters: vec![CounterSpec {
                requested: format!("group{g}"),
                metric: format!("metric{g}"),
            }],
        })
        .collect()
}

fn config(groups_n: usize, mode: InProcessMode) -> ToolConfig {
    ToolConfig {
        groups: groups(groups_n),
        mode,
        ..ToolConfig::default()
    }
}

fn harness_with(config: ToolConfig, policy: Option<Box<dyn ReplayPolicy>>) -> Harness {
    let sink = Arc::new(MemorySink::default());
    let aborts: Aborts = Arc::default();
    let options = EngineOptions {
        logger: Arc::new(SilentLogger),
        abort: {
            let aborts = aborts.clone();
            let sink = sink.clone();
            Arc::new(move |message: &str| {
                let closes = sink.closes.load(Ordering::SeqCst);
                aborts.lock().unwrap().push((message.to_string(), closes));
            })
        },
        staging_reserve_bytes: 1024,
        window_spans_calls: true,
    };
    let policy = policy.unwrap_or_else(|| Box::new(CounterGroupsPolicy::new(&config)));
    let engine = Engine::with_options(config, sink.clone(), policy, options).unwrap();
    engine.inventory().insert(Region {
        device: 0,
        base: VALUE_BASE,
        bytes: 8,
        kind: AllocKind::Device,
    });
    Harness {
        engine,
        sink,
        aborts,
    }
}

fn harness(groups_n: usize, mode: InProcessMode) -> Harness {
    harness_with(config(groups_n, mode), None)
}

fn info(kind: LaunchKind) -> DispatchInfo {
    DispatchInfo {
        device: 0,
        kind,
        kernel_name: "_Z6kernelv".into(),
        kernel_id: 7,
        stream_id: 1,
        correlation_id: 99,
        grid: [4, 1, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
    }
}

/// One launch as a backend drives it: enter, the app's execution (unless captured), exit.
fn launch(h: &Harness, backend: &mut MockBackend, kind: LaunchKind) {
    let ticket = h.engine.launch_enter(backend, &info(kind));
    if kind != LaunchKind::StreamCapture {
        backend.execute();
    }
    h.engine.launch_exit(backend, ticket, &());
}

/// A call of the application with `effect`, as a backend drives it.
fn call(h: &Harness, backend: &mut MockBackend, name: &str, effect: CallEffect) {
    let guard = h
        .engine
        .enter_call(backend, name, effect, DeviceScope::One(0));
    h.engine.exit_call(backend, guard);
}

/// A copy into the tracked allocation: the mock's memory changes by `by`.
fn write_call(h: &Harness, backend: &mut MockBackend, by: u64) {
    let guard = h.engine.enter_call(
        backend,
        "cuMemcpyHtoDAsync_v2",
        CallEffect::DeviceWrite {
            device: 0,
            base: 0x1000,
            bytes: 8,
        },
        DeviceScope::One(0),
    );
    backend.value += by;
    h.engine.exit_call(backend, guard);
}

/// A tool that logs its callbacks, stops after `stop_after` if set, and asks for `count`.
struct ScriptedPolicy {
    count: PassCount,
    decides: bool,
    stop_after: Option<u32>,
    calls: Arc<Mutex<Vec<String>>>,
}

impl ReplayPolicy for ScriptedPolicy {
    fn pass_count(&self, _d: &PolicyDispatch<'_>) -> PassCount {
        self.count
    }
    fn pass_group(&self, _d: &PolicyDispatch<'_>, pass: u32) -> Option<usize> {
        Some(pass as usize % 2)
    }
    fn has_continue_decision(&self) -> bool {
        self.decides
    }
    fn continue_after(&self, d: &PolicyDispatch<'_>, pass: u32, total: Option<u32>) -> bool {
        self.calls
            .lock()
            .unwrap()
            .push(format!("continue {} {pass} {total:?}", d.dispatch_id));
        self.stop_after != Some(pass)
    }
    fn on_pass_start(&self, _d: &PolicyDispatch<'_>, pass: u32) {
        self.calls.lock().unwrap().push(format!("start {pass}"));
    }
    fn on_pass_stop(&self, _d: &PolicyDispatch<'_>, pass: u32, result: &PassResult) {
        self.calls
            .lock()
            .unwrap()
            .push(format!("stop {pass} {}", result.counters.len()));
    }
}

fn scripted(
    count: PassCount,
    decides: bool,
    stop_after: Option<u32>,
) -> (Harness, Arc<Mutex<Vec<String>>>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let policy = ScriptedPolicy {
        count,
        decides,
        stop_after,
        calls: calls.clone(),
    };
    (
        harness_with(
            config(2, InProcessMode::KernelReplay),
            Some(Box::new(policy)),
        ),
        calls,
    )
}

fn window_harness(groups_n: usize, window: crate::config::ReplayWindow) -> Harness {
    let mut config = config(groups_n, InProcessMode::KernelReplay);
    config.replay_window = window;
    harness_with(config, None)
}

/// Adds a region of device 0 to the engine's inventory.
fn insert_region(h: &Harness, base: u64, bytes: u64, kind: AllocKind) {
    h.engine.inventory().insert(Region {
        device: 0,
        base,
        bytes,
        kind,
    });
}

fn window_backend(max_window: usize) -> MockBackend {
    MockBackend {
        max_window,
        ..MockBackend::new()
    }
}

fn passes_by_dispatch(h: &Harness) -> Vec<(u64, Option<u32>)> {
    let mut seen: Vec<(u64, Option<u32>)> = h
        .sink
        .dispatches()
        .iter()
        .map(|d| (d.dispatch_id, d.replay_pass))
        .collect();
    seen.sort();
    seen
}
