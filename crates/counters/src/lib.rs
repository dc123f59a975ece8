//! Hardware counters through CUPTI: the metric catalog (host and device), the Range Profiler and
//! its hardware-pass schedules, and the per-context counter set-up begun at context creation.
pub mod catalog;
pub mod profiler;
pub mod setup;

/// Counter groups as metric names, group i = pass i.
pub type MetricGroups = Vec<Vec<String>>;
