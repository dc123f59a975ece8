//! kreplay's records and the files that hold them: rocpd SQLite (written as data arrives),
//! `counter_collection.csv` and friends, and rocprofv3-style JSON.
//!
//! Producers send [`Record`]s to a [`DbWriter`] (one database per process, written by a
//! background thread). After the run, [`read_databases`] reads one or several databases back
//! into a [`RunData`], and [`write_outputs`] writes the merged database, CSV and JSON files.
//! `docs/output.md` describes every file, table and column.

// The base: the record model and what every writer shares.
pub mod api;
pub mod api_args;
mod code_object;
mod counter_name;
mod error;
mod identity;
pub mod markers;
pub mod memory;
mod naming;
mod numbers;
pub mod occupancy;
pub mod records;
mod schema;
mod section_spec;
mod spill;
mod views;
// The run as read back, and what is computed from it.
mod domain_stats;
mod facts;
mod name_stats;
pub mod run;
mod section_values;
mod stats;
mod varint;
// Where files go and how they are written.
mod csv_file;
mod files;
mod output_file;
// The writers (and the database's reader), each using only the modules above, never another.
mod csv_out;
pub mod db;
mod json_out;
mod pftrace;
pub mod sections_out;
pub mod stats_out;
// Every format of a run at once.
pub mod output;
pub mod progress;
#[cfg(test)]
mod testdata;

pub use api::{ApiDomain, ApiRecord};
pub use api_args::{ApiArg, ApiArgs, RecordedArgs};
pub use db::DbWriter;
pub use db::{open_database, open_databases, read_database, read_databases};
pub use error::FormatError;
pub use json_out::{read_json_counter_records, JsonCounterRecord};
pub use markers::{MarkerKind, MarkerRecord};
pub use memory::{AllocationOperation, CopyDirection, MemoryAllocationRecord, MemoryCopyRecord};
pub use numbers::format_bytes;
pub use output::{write_outputs, write_outputs_with, OutputFormat};
pub use progress::WriteProgress;
pub use records::*;
pub use run::{ProcessRun, RunData};
