//! Names every output gives the same way: a metric's block, a device's vendor, a kernel's
//! truncated name.

/// The block of a metric as CUPTI names it (`sm__warps_launched.sum` is in block `sm`).
pub(crate) fn metric_block(metric: &str) -> &str {
    metric.split("__").next().unwrap_or(metric)
}

/// The vendor every output names for a device: NVIDIA's, or the reference software device's
/// (chip `SIM`).
pub(crate) fn vendor_for_chip(chip: &str) -> &'static str {
    if chip == "SIM" {
        "kreplay software device"
    } else {
        "NVIDIA"
    }
}

/// rocprofv3's truncated kernel name: the demangled name without its argument list.
pub(crate) fn truncated_name(demangled: &str) -> &str {
    demangled.split('(').next().unwrap_or(demangled)
}
