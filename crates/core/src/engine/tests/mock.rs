//! The fake device the engine's tests drive: it logs every call and models memory as one counter
//! that each execution increments (so a missing or extra restore shows in the final value).

use super::*;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Op {
    Drain,
    Snapshot(Staging),
    Restore,
    Release,
    /// A unit planned for these groups.
    Plan(Vec<Option<usize>>),
    /// An execution started for up to this many launches.
    Start(usize, usize),
    /// An execution stopped, with this many measured launches.
    Stop(usize),
    /// The timing execution started for up to this many launches.
    StartTiming(usize),
    Relaunch,
    Execute,
    Capture,
    Apply,
}

/// The unit the mock measures.
#[derive(Debug, Default)]
pub(super) struct MockUnit {
    pub(super) groups: Vec<Option<usize>>,
    pub(super) plan: Option<UnitPlan>,
    pub(super) running: Option<usize>,
    pub(super) pending: bool,
    pub(super) launches: usize,
    pub(super) measured: Vec<Option<usize>>,
}

/// Where the mock device's memory lives.
pub(super) const VALUE_BASE: u64 = 0x1000;

/// The value when the snapshot covers its region, and the bytes covered.
pub(super) type MockSnapshot = (Option<u64>, u64);

#[derive(Default)]
pub(super) struct MockBackend {
    pub(super) ops: Vec<Op>,
    /// Device memory: incremented by every execution; it lives in the region at `value_base`
    /// ([`VALUE_BASE`] unless a test says otherwise; a snapshot holds it only when it covers
    /// that region).
    pub(super) value: u64,
    pub(super) value_base: u64,
    pub(super) free_bytes: u64,
    pub(super) device_staging_full: bool,
    pub(super) host_staging_full: bool,
    pub(super) drain_times_out: bool,
    pub(super) restore_fails: bool,
    pub(super) relaunch_fails: bool,
    /// How long every relaunch takes.
    pub(super) relaunch_takes: Duration,
    /// The timing execution cannot start (its launches still run).
    pub(super) timing_start_fails: bool,
    /// Relaunches that succeed before every later one fails.
    pub(super) relaunches_before_failing: Option<usize>,
    pub(super) collectable: Option<usize>,
    /// Calls of the query methods (free memory, collectable groups).
    pub(super) queries: usize,
    /// Launches a unit may hold (0 or 1: no windows).
    pub(super) max_window: usize,
    pub(super) retain_fails: bool,
    /// Executions cannot be started (counters cannot be programmed).
    pub(super) start_fails: bool,
    /// One execution measures every group (a packing backend).
    pub(super) packed: bool,
    /// The next stop fails (the counters did not match the launches).
    pub(super) stop_fails: bool,
    /// What every launch's parameters hold.
    pub(super) addresses: Vec<u64>,
    /// Executions group 0 alone needs (a metric over several hardware passes; 0 means 1).
    pub(super) span: usize,
    pub(super) unit: MockUnit,
    /// Measured launches begun since the unit's conditions were last taken (a backend that
    /// flushes before each would report them as flushed).
    pub(super) launches_since_conditions: usize,
    /// The next `unit_counters` fails (after ending the unit, as the trait says).
    pub(super) counters_fail: bool,
    /// `unit_counters` calls to let through before `counters_fail` applies.
    pub(super) counters_fail_after: usize,
    /// Calls of `abandon_unit`.
    pub(super) abandons: usize,
    /// Runs timing executions (whose launches last 2 ns, against 5 for measured ones).
    pub(super) timing_executions: bool,
    /// Times launches without waiting (`trace_starts` gives tags); the tags issued, unread.
    pub(super) traces: bool,
    pub(super) traced: Vec<u64>,
    pub(super) next_tag: u64,
}

/// The mock's index for the timing execution.
pub(super) const TIMING: usize = usize::MAX;

impl MockBackend {
    pub(super) fn new() -> Self {
        MockBackend {
            free_bytes: u64::MAX / 2,
            value_base: VALUE_BASE,
            ..MockBackend::default()
        }
    }

    /// The application's own execution of the launch.
    pub(super) fn execute(&mut self) {
        self.ops.push(Op::Execute);
        self.value += 1;
    }

    pub(super) fn count(&self, op: &Op) -> usize {
        self.ops.iter().filter(|o| *o == op).count()
    }
}

impl Backend for MockBackend {
    type Launch = ();
    type Snapshot = MockSnapshot;
    type Capture = u64;
}

impl Memory for MockBackend {
    fn drain(&mut self, device: DeviceId, deadline: Duration) -> Result<(), BackendError> {
        self.ops.push(Op::Drain);
        if self.drain_times_out {
            return Err(BackendError::DrainTimeout { device, deadline });
        }
        Ok(())
    }

    fn device_free_bytes(&mut self, _device: DeviceId) -> u64 {
        self.queries += 1;
        self.free_bytes
    }

    fn snapshot(
        &mut self,
        _device: DeviceId,
        regions: &[Region],
        place: Staging,
    ) -> Result<MockSnapshot, BackendError> {
        let bytes = regions.iter().map(|r| r.bytes).sum();
        let full = match place {
            Staging::Device => self.device_staging_full,
            Staging::Host => self.host_staging_full,
            Staging::None => true,
        };
        if full {
            return Err(BackendError::OutOfStagingMemory(place, bytes));
        }
        self.ops.push(Op::Snapshot(place));
        let value = regions
            .iter()
            .any(|r| r.base == self.value_base)
            .then_some(self.value);
        Ok((value, bytes))
    }

    fn restore(&mut self, snapshot: &MockSnapshot) -> Result<u64, BackendError> {
        self.ops.push(Op::Restore);
        if self.restore_fails {
            return Err(BackendError::Failed("copy failed".into()));
        }
        let (value, bytes) = *snapshot;
        if let Some(value) = value {
            self.value = value;
        }
        Ok(bytes)
    }

    fn release(&mut self, _snapshot: MockSnapshot) {
        self.ops.push(Op::Release);
    }
}

impl Measurement for MockBackend {
    fn trace_starts(&mut self, _device: DeviceId) -> Result<Option<u64>, BackendError> {
        if !self.traces {
            return Ok(None);
        }
        self.next_tag += 1;
        Ok(Some(self.next_tag))
    }

    fn trace_ends(&mut self, _device: DeviceId, tag: u64) -> Result<(), BackendError> {
        self.traced.push(tag);
        Ok(())
    }

    fn traced_times(
        &mut self,
        _device: DeviceId,
        _at_least: usize,
    ) -> Vec<(u64, Result<Timing, BackendError>)> {
        self.traced
            .drain(..)
            .map(|tag| {
                let timing = Timing {
                    start_ns: tag * 10,
                    end_ns: tag * 10 + 5,
                };
                (tag, Ok(timing))
            })
            .collect()
    }

    fn executions_of_group(&mut self, _device: DeviceId, group: usize) -> usize {
        if group == 0 {
            self.span.max(1)
        } else {
            1
        }
    }

    fn collectable_groups(&mut self, _device: DeviceId, configured: usize) -> usize {
        self.queries += 1;
        self.collectable.unwrap_or(configured)
    }

    fn max_window(&mut self, _device: DeviceId) -> usize {
        self.max_window.max(1)
    }

    fn plan_unit(
        &mut self,
        _device: DeviceId,
        groups: &[Option<usize>],
    ) -> Result<UnitPlan, BackendError> {
        self.ops.push(Op::Plan(groups.to_vec()));
        let plan = if self.span > 1 && groups == [Some(0)] {
            UnitPlan {
                executions: self.span,
                execution_of_pass: vec![0],
            }
        } else if self.packed {
            UnitPlan {
                executions: 1,
                execution_of_pass: vec![0; groups.len()],
            }
        } else {
            UnitPlan::one_per_pass(groups.len())
        };
        self.unit = MockUnit {
            groups: groups.to_vec(),
            measured: vec![None; plan.executions],
            plan: Some(plan.clone()),
            ..MockUnit::default()
        };
        Ok(plan)
    }

    fn start_execution(
        &mut self,
        _device: DeviceId,
        execution: usize,
        ranges: usize,
    ) -> Result<(), BackendError> {
        assert!(self.unit.running.is_none(), "start while running");
        assert!(self.unit.plan.is_some(), "start without a plan");
        if self.start_fails {
            return Err(BackendError::Failed("counters busy".into()));
        }
        self.ops.push(Op::Start(execution, ranges));
        self.unit.running = Some(execution);
        self.unit.launches = 0;
        Ok(())
    }

    fn launch_starts(&mut self, _device: DeviceId) -> Result<(), BackendError> {
        assert!(
            self.unit.running.is_some(),
            "launch_starts outside an execution"
        );
        self.unit.pending = true;
        self.launches_since_conditions += 1;
        Ok(())
    }

    fn take_unit_conditions(&mut self, _device: DeviceId) -> UnitConditions {
        UnitConditions {
            cache: if std::mem::take(&mut self.launches_since_conditions) > 0 {
                kreplay_format::CacheState::Flushed
            } else {
                kreplay_format::CacheState::AsLeft
            },
            ..UnitConditions::default()
        }
    }

    fn launch_ends(&mut self, _device: DeviceId) -> Result<(), BackendError> {
        assert!(
            std::mem::take(&mut self.unit.pending),
            "launch_ends without start"
        );
        self.unit.launches += 1;
        Ok(())
    }

    fn launch_abandoned(&mut self, _device: DeviceId) {
        self.unit.pending = false;
    }

    fn stop_execution(&mut self, _device: DeviceId) -> Result<Vec<Timing>, BackendError> {
        let execution = self.unit.running.take().expect("stop without start");
        self.ops.push(Op::Stop(self.unit.launches));
        if std::mem::take(&mut self.stop_fails) {
            return Err(BackendError::Failed(
                "measured 3 kernels for 2 launches".into(),
            ));
        }
        let duration = if execution == TIMING {
            2
        } else {
            self.unit.measured[execution] = Some(self.unit.launches);
            5
        };
        Ok((0..self.unit.launches)
            .map(|i| Timing {
                start_ns: 10 * i as u64,
                end_ns: 10 * i as u64 + duration,
            })
            .collect())
    }

    fn runs_timing_executions(&mut self, _device: DeviceId) -> bool {
        self.timing_executions
    }

    fn start_timing_execution(
        &mut self,
        _device: DeviceId,
        ranges: usize,
    ) -> Result<(), BackendError> {
        assert!(self.unit.running.is_none(), "start while running");
        self.ops.push(Op::StartTiming(ranges));
        if self.timing_start_fails {
            return Err(BackendError::Failed("timing execution refused".into()));
        }
        self.unit.running = Some(TIMING);
        self.unit.launches = 0;
        Ok(())
    }

    fn unit_counters(&mut self, _device: DeviceId) -> Result<PassCounters, BackendError> {
        let unit = std::mem::take(&mut self.unit);
        let due = self.counters_fail_after == 0;
        self.counters_fail_after = self.counters_fail_after.saturating_sub(1);
        if due && std::mem::take(&mut self.counters_fail) {
            return Err(BackendError::Failed(
                "the counters could not be decoded".into(),
            ));
        }
        let plan = unit.plan.expect("counters without a plan");
        Ok(unit
            .groups
            .iter()
            .zip(&plan.execution_of_pass)
            .map(|(group, execution)| {
                let launches = unit.measured[*execution]?;
                Some(
                    (0..launches)
                        .map(|_| {
                            group
                                .map(|g| {
                                    vec![CounterSample {
                                        name: format!("group{g}").into(),
                                        value: 32.0,
                                    }]
                                })
                                .unwrap_or_default()
                        })
                        .collect(),
                )
            })
            .collect())
    }

    fn abandon_unit(&mut self, _device: DeviceId) {
        self.abandons += 1;
        self.unit = MockUnit::default();
    }
}

impl Relaunch for MockBackend {
    fn relaunch(&mut self, _launch: &()) -> Result<(), BackendError> {
        self.ops.push(Op::Relaunch);
        std::thread::sleep(self.relaunch_takes);
        if let Some(left) = self.relaunches_before_failing.as_mut() {
            if *left == 0 {
                return Err(BackendError::Failed("launch failed".into()));
            }
            *left -= 1;
        }
        if self.relaunch_fails {
            return Err(BackendError::Failed("launch failed".into()));
        }
        self.value += 1;
        Ok(())
    }

    fn retain_launch(&mut self, _launch: &()) -> Result<(), BackendError> {
        if self.retain_fails {
            return Err(BackendError::Failed("parameters unknown".into()));
        }
        Ok(())
    }

    fn launch_addresses(&mut self, _launch: &()) -> Vec<u64> {
        self.addresses.clone()
    }

    fn capture(&mut self, _device: DeviceId, _base: u64, _bytes: u64) -> Result<u64, BackendError> {
        self.ops.push(Op::Capture);
        Ok(self.value)
    }

    fn apply(&mut self, capture: &u64) -> Result<(), BackendError> {
        self.ops.push(Op::Apply);
        self.value = *capture;
        Ok(())
    }
}
