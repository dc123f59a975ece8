//! What the catalog needs from a real device: its chip name and its counter-availability image
//! (read by the safe layer, `kreplay_cuda::cupti::identity`, which retains the device's primary
//! context for the duration of the read).
//!
//! The image tells CUPTI which counters this device can actually schedule (some are reserved or
//! fused off), which can raise pass counts over the chip-only answer (`lts__t_sector_hit_rate.pct`
//! is 1 pass host-only and 2 with an H200's image; reference §0.7).

pub use kreplay_cuda::cupti::identity::{
    chip_name, counter_availability, identify, initialize_profiler, DeviceError, DeviceIdentity,
};
