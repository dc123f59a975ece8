//! kreplay's rocpd SQLite databases: the per-process database written as data arrives
//! ([`DbWriter`], a background thread), a run written as one database ([`write_rocpd`]), and
//! reading databases back into a [`RunData`](crate::RunData).

mod api;
pub mod backlog;
mod blocks;
mod btree;
mod bulk;
mod bulk_file;
mod bulk_merge;
mod code_objects;
mod descriptions;
mod events;
mod file;
mod inserter;
mod markers;
mod memory;
mod merged;
mod pages;
mod pass_pages;
mod process_rows;
mod read;
mod read_api;
mod read_blocks;
mod read_code_objects;
mod read_markers;
mod read_memory;
mod read_trace_blocks;
mod record_counts;
mod stepped;
mod trace_blocks;
mod trace_order;
mod trace_source;
mod writer;

pub use merged::{write_rocpd, write_rocpd_with};
pub use read::{open_database, open_databases, read_database, read_databases};
pub use writer::{
    records_sent, records_settled, DbWriter, BACKLOG_AT, BATCH_INTERVAL, BATCH_RECORDS,
    MAX_QUEUED_RECORDS,
};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_api;
#[cfg(test)]
mod tests_blocks;
#[cfg(test)]
mod tests_bulk;
#[cfg(test)]
mod tests_bulk_traces;
#[cfg(test)]
mod tests_code_objects;
#[cfg(test)]
mod tests_id_ranges;
#[cfg(test)]
mod tests_markers;
#[cfg(test)]
mod tests_memory;
#[cfg(test)]
mod tests_pass_pages;
#[cfg(test)]
mod tests_passes;
#[cfg(test)]
mod tests_record_counts;
#[cfg(test)]
mod tests_speed;
#[cfg(test)]
mod tests_trace_blocks;
#[cfg(test)]
mod tests_trace_pages;
