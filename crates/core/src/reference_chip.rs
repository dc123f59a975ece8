//! The chip of the reference software device (chip `SIM`, implemented by the `kreplay-sim`
//! test instrument and run by `kreplay demo`): a handful of counters computed from what a kernel
//! does, and a hardware limit of [`COUNTERS_PER_PASS`] counters per pass so that group fitting
//! and splitting are exercised without a GPU. It lives here, with the catalog trait, so that the
//! CLI checks groups for that device without depending on the device itself.

use crate::catalog::{suggestions, CatalogError, MetricCatalog, MetricDescription};

/// How many counters the software device can collect in one pass.
pub const COUNTERS_PER_PASS: usize = 2;

/// The chip name the software device reports.
pub const SIM_CHIP: &str = "SIM";

/// One metric of the software device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SimMetric {
    /// Warps launched: blocks × ceil(threads per block / 32). Deterministic.
    WarpsLaunched,
    /// Instructions the kernel reported executing. Deterministic.
    InstExecuted,
    /// Elapsed cycles, maximum over the device: derived from the instructions plus jitter, as a
    /// real clock counter varies between passes.
    CyclesElapsed,
    /// Bytes the kernel wrote to device memory. Deterministic.
    BytesWritten,
    /// Bytes the kernel read from device memory. Deterministic.
    BytesRead,
}

struct MetricEntry {
    metric: SimMetric,
    name: &'static str,
    description: &'static str,
    hw_unit: &'static str,
    unit: &'static str,
    sub_metric: &'static str,
}

const METRICS: [MetricEntry; 5] = [
    MetricEntry {
        metric: SimMetric::WarpsLaunched,
        name: "sim__warps_launched.sum",
        description: "Number of warps launched, summed over the device",
        hw_unit: "sm",
        unit: "warp",
        sub_metric: ".sum",
    },
    MetricEntry {
        metric: SimMetric::InstExecuted,
        name: "sim__inst_executed.sum",
        description: "Number of warp instructions executed, summed over the device",
        hw_unit: "sm",
        unit: "inst",
        sub_metric: ".sum",
    },
    MetricEntry {
        metric: SimMetric::CyclesElapsed,
        name: "sim__cycles_elapsed.max",
        description: "Cycles elapsed while the kernel ran, maximum over the device's units (varies between runs)",
        hw_unit: "sm",
        unit: "cycle",
        sub_metric: ".max",
    },
    MetricEntry {
        metric: SimMetric::BytesWritten,
        name: "sim__bytes_written.sum",
        description: "Bytes written to device memory, summed over the device",
        hw_unit: "dram",
        unit: "byte",
        sub_metric: ".sum",
    },
    MetricEntry {
        metric: SimMetric::BytesRead,
        name: "sim__bytes_read.sum",
        description: "Bytes read from device memory, summed over the device",
        hw_unit: "dram",
        unit: "byte",
        sub_metric: ".sum",
    },
];

impl SimMetric {
    /// The metric named exactly `name`.
    pub fn from_name(name: &str) -> Option<SimMetric> {
        METRICS.iter().find(|e| e.name == name).map(|e| e.metric)
    }

    pub fn name(self) -> &'static str {
        METRICS
            .iter()
            .find(|e| e.metric == self)
            .map(|e| e.name)
            .unwrap_or("")
    }

    /// Whether two executions of the same kernel on the same inputs give the same value.
    pub fn is_deterministic(self) -> bool {
        self != SimMetric::CyclesElapsed
    }
}

/// The catalog of chip `SIM`.
#[derive(Debug, Clone, Default)]
pub struct SimCatalog;

impl SimCatalog {
    pub fn new() -> Self {
        SimCatalog
    }

    fn unknown(&self, name: &str) -> CatalogError {
        let known: Vec<String> = METRICS.iter().map(|e| e.name.to_string()).collect();
        CatalogError::UnknownMetric {
            name: name.to_string(),
            chip: SIM_CHIP.to_string(),
            suggestions: suggestions(&known, name),
        }
    }
}

impl MetricCatalog for SimCatalog {
    fn chip(&self) -> &str {
        SIM_CHIP
    }

    fn metric_names(&self) -> Result<Vec<String>, CatalogError> {
        Ok(METRICS.iter().map(|e| e.name.to_string()).collect())
    }

    fn describe(&self, metric: &str) -> Result<MetricDescription, CatalogError> {
        let entry = METRICS
            .iter()
            .find(|e| e.name == metric)
            .ok_or_else(|| self.unknown(metric))?;
        Ok(MetricDescription {
            name: entry.name.to_string(),
            description: entry.description.to_string(),
            hw_unit: entry.hw_unit.to_string(),
            unit: entry.unit.to_string(),
            metric_type: "counter".to_string(),
            sub_metrics: vec![entry.sub_metric.to_string()],
        })
    }

    /// `ceil(distinct metrics / 2)`: each pass holds two counters; a repeated name is one counter.
    fn passes(&self, metrics: &[&str]) -> Result<u32, CatalogError> {
        let mut distinct: Vec<SimMetric> = Vec::new();
        for name in metrics {
            let metric = SimMetric::from_name(name).ok_or_else(|| self.unknown(name))?;
            if !distinct.contains(&metric) {
                distinct.push(metric);
            }
        }
        Ok(distinct.len().div_ceil(COUNTERS_PER_PASS) as u32)
    }
}

#[cfg(test)]
mod tests;
