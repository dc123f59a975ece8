//! What one kernel execution did, the source of every counter.

use kreplay_core::reference_chip::SimMetric;

/// What one kernel execution did, the source of every counter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecStats {
    pub warps: u64,
    pub instructions: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub cycles: u64,
}

impl ExecStats {
    pub(super) fn add(&mut self, other: &ExecStats) {
        self.warps += other.warps;
        self.instructions += other.instructions;
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.cycles = self.cycles.max(other.cycles);
    }

    pub(super) fn value(&self, metric: SimMetric) -> f64 {
        (match metric {
            SimMetric::WarpsLaunched => self.warps,
            SimMetric::InstExecuted => self.instructions,
            SimMetric::CyclesElapsed => self.cycles,
            SimMetric::BytesWritten => self.bytes_written,
            SimMetric::BytesRead => self.bytes_read,
        }) as f64
    }
}
