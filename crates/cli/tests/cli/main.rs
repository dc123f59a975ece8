//! The CLI tests: the real `kreplay` binary in temporary folders, against the reference software
//! device. One test binary (one link), one module per area.

mod api_args;
mod api_trace;
mod avail;
mod code_objects;
mod command_line;
mod common;
mod corpus;
mod domain_stats;
mod faults;
mod first_hour;
mod kernel_naming;
mod markers;
mod memory;
mod pftrace;
mod release;
mod rocpd_views;
mod rocprofv3_tracing_validator;
mod rocprofv3_validators;
mod scoped;
mod sections;
mod sim_graph;
mod sim_replay;
mod sim_window;
mod stats;
mod switches;
mod trace_outputs;
