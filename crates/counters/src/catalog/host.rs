//! CUPTI's Profiler Host API as the catalog uses it (the calls live in the safe layer,
//! `kreplay_cuda::cupti::host_object`): metric lists, metric properties, config images and pass
//! counts from a chip name alone — no GPU, no CUDA context — and how `avail` names metric types.

pub use kreplay_cuda::cupti::host_object::{
    passes_of_config_image, supported_chips, HostObject, MetricProperties, MetricType,
};
pub use kreplay_cuda::cupti::{host_api_lock, CuptiCallError};

/// CUPTI's three metric types, in the order `avail` lists them.
pub const METRIC_TYPES: [MetricType; 3] = MetricType::ALL;

/// How `avail info` spells a metric type.
pub fn metric_type_name(metric_type: MetricType) -> &'static str {
    match metric_type {
        MetricType::Counter => "counter",
        MetricType::Ratio => "ratio",
        MetricType::Throughput => "throughput",
    }
}
