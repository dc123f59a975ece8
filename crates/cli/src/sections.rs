//! Nsight Compute's sections and sets (`--section NAME`, `--set NAME`): which metrics they
//! collect and how their rows are shown.
//!
//! The sections come from, in this order: the folders of `--section-folder`; else the `sections`
//! folder of the user's Nsight Compute installation ([`find_installation`]: `ncu` on `PATH`, then
//! `/usr/local/cuda*/nsight-compute-*` and `/opt/nvidia/nsight-compute/*`, newest first); else
//! kreplay's own ([`builtin`]). Section files are read with a schema-less text-format reader
//! ([`textproto`]); kreplay keeps of each section its identifier, display name, order, sets, the
//! metrics of its header and body (with their architecture filters and options) and its derived
//! metric definitions. Rules and the metrics a section collects only for its rules (the
//! top-level `Metrics` list) are not used.
//!
//! [`resolve`] turns the chosen sections into the metrics to collect and, per row, how its value
//! is obtained ([`kreplay_format::sections_out`]): a CUPTI metric, a launch attribute, a derived
//! expression, or `n/a` with the reason (regular expressions, breakdowns, PM sampling, names that
//! are not CUPTI metrics of the chip).

pub mod builtin;
mod expression;
mod install;
mod library;
mod resolve;
mod section_file;
pub mod textproto;

pub use install::SearchPlaces;
pub use library::Library;
pub use resolve::{candidate_metrics, collectable, resolve, Resolution};
pub use section_file::Details;

#[cfg(test)]
mod tests;
