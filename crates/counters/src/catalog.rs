//! The CUPTI metric catalog: metric names, descriptions and pass counts for a chip, from
//! CUPTI's Profiler Host API — on a machine with no GPU for `--chip GH100`, or for a device
//! with its own counter-availability image (which can raise pass counts; reference §6.3).

mod cupti_catalog;
pub mod device;
mod errors;
pub mod host;
pub mod identity_cache;
mod index;

pub use cupti_catalog::CuptiCatalog;

#[cfg(test)]
mod alias_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub mod tests_support;
