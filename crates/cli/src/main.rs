//! `kreplay`: rocprofv3's counter-collection command line for NVIDIA GPUs.

mod args;
mod error;
mod input;
mod placeholders;
mod plan;

fn main() {}
