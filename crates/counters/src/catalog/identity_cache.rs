//! A device's identity (chip name and counter-availability image) kept between runs.
//!
//! Reading it costs the CLI ≈ 0.5 s on an H200 before the application can start (`cuInit`,
//! profiler initialisation, a primary context, the image itself: `bench/probes/init_cost.cu`).
//! Both depend only on the GPU and the software that answers for it, so a run reuses the
//! identity an earlier run read, under a key built from files the NVIDIA kernel driver
//! publishes (no CUDA call): the driver version, each GPU's model, UUID, VBIOS, firmware and bus
//! location, the MIG capability tree (instances appear there), the profiling permission and the
//! user, `CUDA_VISIBLE_DEVICES` / `CUDA_DEVICE_ORDER`, and the CUPTI libraries (path, size,
//! modification time). Any change of these reads the device again. Without
//! `/proc/driver/nvidia` there is no key and nothing is cached.
//!
//! Where: `$KREPLAY_CACHE_DIR`, else `$XDG_CACHE_HOME/kreplay`, else `$HOME/.cache/kreplay`;
//! `KREPLAY_CACHE_DIR=off` switches the cache off. The file holds the few most recent keys.
//! Writes go to a temporary file renamed into place, so concurrent runs never read half a file.
//!
//! A cached identity is checked twice: a group the cached image rejects is checked again on a
//! freshly read one before the run is refused, and the injected library compares the image it
//! reads in the application with [`digest()`] of the one the checks used; when they differ it
//! reports [`STALE_WARNING`] and the CLI drops the entry. (Using the cached image in the
//! application instead of reading it was tried: ≈ 50–80 ms less per run on an H200, most of
//! the read's ≈ 130 ms moving into CUPTI's first counter start; but a stale entry then goes
//! unnoticed (CUPTI does not give the image while the profiler is enabled), and a check at exit
//! that disabled the profiler first ended the application with SIGSEGV on the H200. Not kept.)

mod digest;
mod file;
mod key;
mod place;
#[cfg(test)]
mod tests;

pub use digest::{digest, stale_digest, stale_warning, STALE_WARNING};
pub use file::{checked_groups, forget, load, remember_groups, store, FILE_NAME};
pub use key::{key_for, Key};
pub use place::{cache_dir, slot, ENV_CACHE_DIR};
