//! kreplay's records and the files that hold them: rocpd SQLite (written as data arrives),
//! `counter_collection.csv` and friends, and rocprofv3-style JSON.
//!
//! Producers send [`Record`]s to a [`DbWriter`] (one database per process, written by a
//! background thread). After the run, [`read_databases`] reads one or several databases back
//! into a [`RunData`], and [`write_outputs`] writes the merged database, CSV and JSON files.
//! `docs/output.md` describes every file, table and column.

mod csv_out;
pub mod db;
mod error;
mod json_out;
mod numbers;
pub mod occupancy;
pub mod output;
mod pftrace;
pub mod records;
pub mod run;
mod schema;
pub mod sections_out;
pub mod stats_out;
#[cfg(test)]
mod testdata;

pub use db::DbWriter;
pub use db::{read_database, read_databases};
pub use error::FormatError;
pub use json_out::{read_json_counter_records, JsonCounterRecord};
pub use output::{write_outputs, OutputFormat};
pub use records::*;
pub use run::{ProcessRun, RunData};
