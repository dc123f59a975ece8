//! Executing a launch on the device and the counters it yields, per thread's unit.

use super::*;

impl SimDevice {
    /// Executes `launch` now (the device is synchronous). Counts into the active pass, if any.
    pub fn execute(&mut self, launch: &SimLaunch) -> Result<(), SimError> {
        let mut context = KernelContext {
            memory: &mut self.memory,
            launch,
            stats: ExecStats {
                warps: launch.warps(),
                ..ExecStats::default()
            },
            fault: None,
        };
        (launch.kernel.def.body)(&mut context);
        let mut stats = context.stats;
        let fault = context.fault;
        stats.cycles = self.cycles_for(&stats);
        let start_ns = self.clock_ns;
        self.clock_ns += stats.cycles.max(1);
        self.activity.executions += 1;
        let end_ns = self.clock_ns;
        if let Some(pending) = self
            .units
            .get_mut(&thread::current().id())
            .and_then(|u| u.pending.as_mut())
        {
            if pending.stats == ExecStats::default() {
                pending.start_ns = start_ns;
            }
            pending.end_ns = end_ns;
            pending.stats.add(&stats);
        }
        self.traced_executed(start_ns, end_ns);
        match fault {
            Some((address, bytes)) => Err(SimError::Fault {
                kernel: launch.kernel.demangled_name().to_string(),
                address,
                bytes,
            }),
            None => Ok(()),
        }
    }

    /// A clock counter: a deterministic base plus up to 5 % jitter, as real runs vary.
    pub(super) fn cycles_for(&mut self, stats: &ExecStats) -> u64 {
        let base = 100 + stats.instructions * 4 + (stats.bytes_read + stats.bytes_written) / 8;
        // xorshift64
        let mut x = self.jitter_state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.jitter_state = x;
        base + x % (base / 20 + 1)
    }

    /// The counters of `group` over `stats`.
    pub(super) fn counters_for(
        &self,
        group: Option<usize>,
        stats: &ExecStats,
    ) -> Vec<CounterSample> {
        match group.and_then(|g| self.groups.get(g)) {
            Some(counters) => counters
                .iter()
                .filter_map(|(name, metric)| {
                    metric.map(|m| CounterSample {
                        name: *name,
                        value: stats.value(m),
                    })
                })
                .collect(),
            None => Vec::new(),
        }
    }

    /// The calling thread's unit, or the shareable unit another thread started (a window
    /// closed by this thread), which this thread then takes over.
    pub(super) fn unit_here(&mut self) -> Result<&mut SimUnit, BackendError> {
        let me = thread::current().id();
        if !self.units.contains_key(&me) {
            let other = self
                .units
                .iter()
                .find(|(_, u)| u.shareable)
                .map(|(thread, _)| *thread);
            if let Some(unit) = other.and_then(|thread| self.units.remove(&thread)) {
                self.units.insert(me, unit);
            }
        }
        self.units
            .get_mut(&me)
            .ok_or_else(|| BackendError::Failed("no unit planned on this thread".to_string()))
    }

    pub(super) fn check_group(&self, group: Option<usize>) -> Result<(), BackendError> {
        let Some(index) = group else { return Ok(()) };
        let counters = self.groups.get(index).ok_or_else(|| {
            BackendError::Failed(format!(
                "counter group {index} does not exist ({} configured)",
                self.groups.len()
            ))
        })?;
        if let Some((name, _)) = counters.iter().find(|(_, m)| m.is_none()) {
            return Err(BackendError::Failed(format!(
                "counter {name} is not a SIM metric"
            )));
        }
        if counters.len() > COUNTERS_PER_PASS {
            return Err(BackendError::Failed(format!(
                "counter group {index} has {} counters; the SIM device collects at most {COUNTERS_PER_PASS} per pass",
                counters.len()
            )));
        }
        Ok(())
    }
}
