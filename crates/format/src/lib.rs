//! kreplay's records and the files that hold them: rocpd SQLite (written as data arrives),
//! `counter_collection.csv` and friends, and rocprofv3-style JSON.

pub mod records;

pub use records::*;
