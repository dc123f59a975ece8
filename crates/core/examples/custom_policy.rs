//! A custom replay policy on kreplay's SDK, driven over a tiny in-example device.
//!
//! Run: `cargo run -p kreplay-core --example custom_policy`
//!
//! The policy mirrors rocprofiler-sdk's kernel-replay samples:
//! - opt-out: only kernels whose block is 64 threads wide are replayed;
//! - early exit: it asks for 4 passes, but stops after pass 1 once two passes agreed;
//! - per-pass services: it "starts" and "stops" a service around every pass.
//!
//! The device holds one buffer; each kernel adds 1 to every element in place. Because memory
//! is restored between passes and not after the last, the buffer ends exactly as after one
//! execution per launch, which the example checks.

use kreplay_core::backend::{
    AllocKind, Backend, BackendError, DeviceId, DispatchInfo, LaunchKind, Measurement, Memory,
    PassCounters, PassResult, Region, Relaunch, Timing,
};
use kreplay_core::config::{CounterGroup, CounterSpec, InProcessMode, ToolConfig};
use kreplay_core::sdk::{PassCount, PolicyDispatch, ReplayPolicy};
use kreplay_core::Engine;
use kreplay_format::{CounterSample, Record, RecordSink, Staging};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The example's policy. State that spans the passes of a dispatch is keyed on `dispatch_id`.
#[derive(Default)]
struct EarlyExitPolicy {
    /// The first counter value seen per dispatch and pass.
    values: Mutex<HashMap<(u64, u32), f64>>,
}

impl ReplayPolicy for EarlyExitPolicy {
    fn pass_count(&self, dispatch: &PolicyDispatch<'_>) -> PassCount {
        if dispatch.info.block[0] == 64 {
            PassCount::Passes(4)
        } else {
            PassCount::OptOut
        }
    }

    fn pass_group(&self, _dispatch: &PolicyDispatch<'_>, _pass: u32) -> Option<usize> {
        Some(0)
    }

    fn has_continue_decision(&self) -> bool {
        true
    }

    /// Stops once the last two passes measured the same value.
    fn continue_after(&self, dispatch: &PolicyDispatch<'_>, pass: u32, total: Option<u32>) -> bool {
        let values = self.values.lock().unwrap();
        let id = dispatch.dispatch_id;
        let stable = pass > 0 && values.get(&(id, pass)) == values.get(&(id, pass - 1));
        println!("  continue after pass {pass} of {total:?}? {}", !stable);
        !stable
    }

    fn on_pass_start(&self, dispatch: &PolicyDispatch<'_>, pass: u32) {
        println!(
            "  dispatch {} pass {pass}: start service",
            dispatch.dispatch_id
        );
    }

    fn on_pass_stop(&self, dispatch: &PolicyDispatch<'_>, pass: u32, result: &PassResult) {
        let value = result.counters.first().map_or(0.0, |c| c.value);
        println!(
            "  dispatch {} pass {pass}: stop service, elements = {value}",
            dispatch.dispatch_id
        );
        self.values
            .lock()
            .unwrap()
            .insert((dispatch.dispatch_id, pass), value);
    }
}

/// A one-buffer device: a launch adds 1 to the first `n` elements.
struct TinyDevice {
    base: u64,
    memory: Vec<u32>,
    touched: u64,
    /// Elements touched by each execution of the current unit.
    measured: Vec<u64>,
}

struct TinyLaunch {
    elements: usize,
}

impl TinyDevice {
    fn execute(&mut self, launch: &TinyLaunch) {
        for x in &mut self.memory[..launch.elements] {
            *x += 1;
        }
        self.touched += launch.elements as u64;
    }
}

impl Backend for TinyDevice {
    type Launch = TinyLaunch;
    type Snapshot = Vec<u32>;
    type Capture = ();
}

impl Memory for TinyDevice {
    fn drain(&mut self, _device: DeviceId, _deadline: Duration) -> Result<(), BackendError> {
        Ok(()) // synchronous device: nothing in flight
    }

    fn device_free_bytes(&mut self, _device: DeviceId) -> u64 {
        1 << 30
    }

    fn snapshot(
        &mut self,
        _device: DeviceId,
        regions: &[Region],
        _place: Staging,
    ) -> Result<Vec<u32>, BackendError> {
        assert!(regions.iter().all(|r| r.base == self.base));
        Ok(self.memory.clone())
    }

    fn restore(&mut self, snapshot: &Vec<u32>) -> Result<u64, BackendError> {
        self.memory.copy_from_slice(snapshot);
        Ok(snapshot.len() as u64 * 4)
    }

    fn release(&mut self, _snapshot: Vec<u32>) {}
}

impl Measurement for TinyDevice {
    fn start_execution(
        &mut self,
        _device: DeviceId,
        _execution: usize,
        _ranges: usize,
    ) -> Result<(), BackendError> {
        self.touched = 0;
        Ok(())
    }

    fn launch_starts(&mut self, _device: DeviceId) -> Result<(), BackendError> {
        Ok(())
    }

    fn launch_ends(&mut self, _device: DeviceId) -> Result<(), BackendError> {
        Ok(())
    }

    fn stop_execution(&mut self, _device: DeviceId) -> Result<Vec<Timing>, BackendError> {
        self.measured.push(self.touched);
        Ok(vec![Timing::default()]) // one launch per execution (no windows)
    }

    fn unit_counters(&mut self, _device: DeviceId) -> Result<PassCounters, BackendError> {
        // The default plan measures pass i in execution i.
        Ok(std::mem::take(&mut self.measured)
            .into_iter()
            .map(|touched| {
                Some(vec![vec![CounterSample {
                    name: "elements".into(),
                    value: touched as f64,
                }]])
            })
            .collect())
    }
}

impl Relaunch for TinyDevice {
    fn relaunch(&mut self, launch: &TinyLaunch) -> Result<(), BackendError> {
        self.execute(launch);
        Ok(())
    }
}

/// Prints what the engine reports.
struct PrintSink;

impl RecordSink for PrintSink {
    fn send(&self, record: Record) {
        match record {
            Record::Dispatch(d) => println!(
                "record: dispatch {} replay_pass {:?} counters {:?}",
                d.dispatch_id, d.replay_pass, d.counters
            ),
            Record::ReplayCost(c) => println!(
                "record: dispatch {} {} in {} passes, {} bytes snapshotted",
                c.dispatch_id,
                c.outcome.as_str(),
                c.passes,
                c.bytes_snapshotted
            ),
            other => println!("record: {other:?}"),
        }
    }
    fn flush(&self) {}
}

fn main() {
    let config = ToolConfig {
        groups: vec![CounterGroup {
            counters: vec![CounterSpec {
                requested: "elements".into(),
                metric: "elements".into(),
            }],
        }],
        mode: InProcessMode::KernelReplay,
        ..ToolConfig::default()
    };
    let engine: Engine<TinyDevice> = Engine::new(
        config,
        Arc::new(PrintSink),
        Box::new(EarlyExitPolicy::default()),
    )
    .expect("valid configuration");
    let mut device = TinyDevice {
        base: 0x1000,
        memory: vec![0; 8],
        touched: 0,
        measured: Vec::new(),
    };
    engine.inventory().insert(Region {
        device: 0,
        base: device.base,
        bytes: 32,
        kind: AllocKind::Device,
    });

    for (block, elements) in [(64, 8), (32, 4), (64, 8)] {
        let info = DispatchInfo {
            device: 0,
            kind: LaunchKind::Kernel,
            kernel_name: format!("add_one_block{block}").into(),
            kernel_id: u64::from(block),
            stream_id: 0,
            correlation_id: 0,
            grid: [1, 1, 1],
            block: [block, 1, 1],
            dynamic_shared_bytes: 0,
        };
        let launch = TinyLaunch { elements };
        println!("launch {} ({elements} elements)", info.kernel_name);
        let ticket = engine.launch_enter(&mut device, &info);
        device.execute(&launch); // the application's own launch: pass 0
        engine.launch_exit(&mut device, ticket, &launch);
    }
    engine.finish();

    // One execution per launch: 3 launches touch elements 0..4, 2 touch 4..8.
    assert_eq!(device.memory, vec![3, 3, 3, 3, 2, 2, 2, 2]);
    println!(
        "memory after replay equals one execution per launch: {:?}",
        device.memory
    );
}
