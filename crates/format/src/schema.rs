//! The rocpd-style SQLite schema that [`crate::DbWriter`] writes and [`crate::read_databases`] reads.
//!
//! Table and column names follow rocpd schema 3 (`rocpd_tables.sql`, see
//! `shared/reference/rocprofv3.md` §2.7), laid out as rocpd's readers expect: each file has a uuid
//! (`_` and 32 hex digits, in `rocpd_metadata`'s `uuid` row), every rocpd table is stored as
//! `<name><uuid>` with a view `<name>` over it (rocpd's importer finds the tables by the uuid and
//! reads the views), and the `pid`, `tid`, `queue_id`, `stream_id` and `region_name_id` columns
//! are ids of rows in the process, thread, queue, stream and string tables, which rocpd's views
//! join on. A process row's id is its operating-system pid and a thread row's its tid when the
//! file has no other with that id (a merged file of two hosts may), so that the ids read as
//! users expect; a CUDA stream is one queue and one stream row (`extdata` `stream_id`). One file
//! holds one or several processes, each row carrying its process's `guid`. Differences from
//! rocpd, all deliberate:
//! - One `rocpd_kernel_dispatch` row (and one `rocpd_event`) per dispatch, carrying the
//!   application's own execution (its lowest pass), whatever the number of replay passes, so that
//!   rocpd's views count calls and durations as the application ran them; its `replay_pass`
//!   column (NULL without kernel replay) says which pass that is. `rocpd_pmc_event` holds each
//!   counter once per dispatch: the value of the lowest pass that measured it, that pass in its
//!   `extdata` (`{"replay_pass":N}`), so that rocpd's `counters_collection` (which sums a
//!   dispatch's rows of one counter) gives that value and never a sum over passes (rocpd's replay
//!   bug, reference §2.7). Every pass is kept in kreplay's own tables: `kreplay_dispatch_pass`
//!   (one row per dispatch and pass: its start and end) and `kreplay_pass_pmc` (one row per
//!   dispatch, pass and counter), which the view `kreplay_pass_counters` joins.
//! - `rocpd_info_pmc` has a row per agent and counter (`agent_id` filled: rocpd's `pmc_info`
//!   view joins on the agent).
//! - rocpd's table for what kreplay does not record (arguments) exists and stays empty; regions,
//!   samples and tracks hold NVTX markers (`--marker-trace`, `db::markers`), memory copies and
//!   allocations those of the memory traces (`db::memory`; the host a `CPU` agent row).
//! - `kreplay_replay_cost`, `kreplay_warning`, `kreplay_dispatch_pass` and `kreplay_pass_pmc` are
//!   our own, and `kreplay_record_block`: the passes, costs and traces again as compact blocks,
//!   which kreplay reads instead of their rows (`db::blocks`, `db::trace_blocks`).
//! - The views (rocpd's data and summary views and ours) are in [`crate::views`].
//! - Rows that a dispatch needed before the producer described them (an agent, kernel or counter
//!   seen first in a dispatch) are written with `extdata` `{"placeholder":true}` and completed
//!   when the description arrives; readers leave placeholders out of the lists they return.

/// `rocpd_metadata` `schema_version` we write (rocpd's major version).
pub(crate) const ROCPD_SCHEMA_VERSION: &str = "3";
/// `rocpd_metadata` `kreplay_schema_version`: bump when a change to the kreplay tables or columns
/// makes databases unreadable across versions. A column added with a default, which the reader
/// reads as that default where it is missing (`timing_execution_ns`), keeps it. Version 4 has
/// one dispatch row per dispatch and the passes in `kreplay_dispatch_pass`; version 3 (one
/// dispatch row per pass) is still read.
pub(crate) const KREPLAY_SCHEMA_VERSION: &str = "4";

/// The versions [`crate::read_databases`] reads: the current one and version 3, whose dispatch
/// rows are one per pass, each with its own event and counter values.
pub(crate) const READABLE_SCHEMA_VERSIONS: &[&str] = &["3", "4"];

/// `rocpd_string` value used as `rocpd_event.category_id` of kernel dispatches.
pub(crate) const CATEGORY_KERNEL_DISPATCH: &str = "KERNEL_DISPATCH";

/// rocpd's tables, each written as `<name><uuid>` with a view `<name>` over it.
pub(crate) const ROCPD_TABLES: &[&str] = &[
    "rocpd_metadata",
    "rocpd_string",
    "rocpd_info_node",
    "rocpd_info_process",
    "rocpd_info_thread",
    "rocpd_info_agent",
    "rocpd_info_pmc",
    "rocpd_info_kernel_symbol",
    "rocpd_event",
    "rocpd_pmc_event",
    "rocpd_kernel_dispatch",
    "rocpd_info_queue",
    "rocpd_info_stream",
    "rocpd_info_code_object",
    "rocpd_track",
    "rocpd_arg",
    "rocpd_region",
    "rocpd_sample",
    "rocpd_memory_copy",
    "rocpd_memory_allocate",
];

/// Tables (or views) a file must have to be read as a kreplay database.
pub(crate) const REQUIRED_TABLES: &[&str] = &[
    "rocpd_info_process",
    "rocpd_info_agent",
    "rocpd_info_kernel_symbol",
    "rocpd_info_pmc",
    "rocpd_kernel_dispatch",
    "rocpd_event",
    "rocpd_pmc_event",
    "kreplay_replay_cost",
    "kreplay_warning",
];

pub(crate) const CREATE_SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS rocpd_metadata{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "tag" TEXT NOT NULL,
    "value" TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS rocpd_string{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "string" TEXT NOT NULL,
    UNIQUE ("guid", "string")
);

CREATE TABLE IF NOT EXISTS rocpd_info_node{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "hash" BIGINT NOT NULL UNIQUE,
    "machine_id" TEXT NOT NULL UNIQUE,
    "system_name" TEXT,
    "hostname" TEXT,
    "release" TEXT,
    "version" TEXT,
    "hardware_name" TEXT,
    "domain_name" TEXT
);

CREATE TABLE IF NOT EXISTS rocpd_info_process{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL UNIQUE,
    "nid" INTEGER NOT NULL,
    "ppid" INTEGER,
    "pid" INTEGER NOT NULL,
    "init" BIGINT,
    "fini" BIGINT,
    "start" BIGINT,
    "end" BIGINT,
    "command" TEXT,
    "environment" JSONB DEFAULT '{}' NOT NULL,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    FOREIGN KEY (nid) REFERENCES rocpd_info_node{U} (id) ON UPDATE CASCADE
);

CREATE TABLE IF NOT EXISTS rocpd_info_thread{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "ppid" INTEGER,
    "pid" INTEGER NOT NULL,
    "tid" INTEGER NOT NULL,
    "name" TEXT,
    "start" BIGINT,
    "end" BIGINT,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    UNIQUE ("guid", "tid")
);

CREATE TABLE IF NOT EXISTS rocpd_info_agent{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "type" TEXT CHECK ("type" IN ('CPU', 'GPU', 'NIC')),
    "absolute_index" INTEGER,
    "logical_index" INTEGER,
    "type_index" INTEGER,
    "uuid" INTEGER,
    "name" TEXT,
    "model_name" TEXT,
    "vendor_name" TEXT,
    "product_name" TEXT,
    "user_name" TEXT,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    FOREIGN KEY (nid) REFERENCES rocpd_info_node{U} (id) ON UPDATE CASCADE
);

CREATE TABLE IF NOT EXISTS rocpd_info_pmc{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "agent_id" INTEGER,
    "target_arch" TEXT CHECK ("target_arch" IN ('CPU', 'GPU', 'NIC')),
    "event_code" INT,
    "instance_id" INTEGER,
    "name" TEXT NOT NULL,
    "symbol" TEXT NOT NULL,
    "description" TEXT,
    "long_description" TEXT DEFAULT '',
    "component" TEXT,
    "units" TEXT DEFAULT '',
    "value_type" TEXT CHECK ("value_type" IN ('ABS', 'ACCUM', 'RELATIVE')),
    "block" TEXT,
    "expression" TEXT,
    "is_constant" INTEGER,
    "is_derived" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    FOREIGN KEY (agent_id) REFERENCES rocpd_info_agent{U} (id) ON UPDATE CASCADE
);

CREATE TABLE IF NOT EXISTS rocpd_info_kernel_symbol{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "code_object_id" INTEGER NOT NULL,
    "kernel_name" TEXT,
    "display_name" TEXT,
    "kernel_object" INTEGER,
    "kernarg_segment_size" INTEGER,
    "kernarg_segment_alignment" INTEGER,
    "group_segment_size" INTEGER,
    "private_segment_size" INTEGER,
    "sgpr_count" INTEGER,
    "arch_vgpr_count" INTEGER,
    "accum_vgpr_count" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

CREATE TABLE IF NOT EXISTS rocpd_event{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "category_id" INTEGER,
    "stack_id" INTEGER,
    "parent_stack_id" INTEGER,
    "correlation_id" INTEGER,
    "call_stack" JSONB DEFAULT '{}' NOT NULL,
    "line_info" JSONB DEFAULT '{}' NOT NULL,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    FOREIGN KEY (category_id) REFERENCES rocpd_string{U} (id) ON UPDATE CASCADE
);

CREATE TABLE IF NOT EXISTS rocpd_pmc_event{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "event_id" INTEGER,
    "pmc_id" INTEGER NOT NULL,
    "value" REAL DEFAULT 0.0,
    "extdata" JSONB DEFAULT '{}',
    FOREIGN KEY (pmc_id) REFERENCES rocpd_info_pmc{U} (id) ON UPDATE CASCADE,
    FOREIGN KEY (event_id) REFERENCES rocpd_event{U} (id) ON UPDATE CASCADE
);

CREATE TABLE IF NOT EXISTS rocpd_kernel_dispatch{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "tid" INTEGER,
    "agent_id" INTEGER NOT NULL,
    "kernel_id" INTEGER NOT NULL,
    "dispatch_id" INTEGER NOT NULL,
    "queue_id" INTEGER NOT NULL,
    "stream_id" INTEGER NOT NULL,
    "start" BIGINT NOT NULL,
    "end" BIGINT NOT NULL,
    "private_segment_size" INTEGER,
    "group_segment_size" INTEGER,
    "workgroup_size_x" INTEGER NOT NULL,
    "workgroup_size_y" INTEGER NOT NULL,
    "workgroup_size_z" INTEGER NOT NULL,
    "grid_size_x" INTEGER NOT NULL,
    "grid_size_y" INTEGER NOT NULL,
    "grid_size_z" INTEGER NOT NULL,
    "region_name_id" INTEGER,
    "event_id" INTEGER,
    "replay_pass" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    FOREIGN KEY (agent_id) REFERENCES rocpd_info_agent{U} (id) ON UPDATE CASCADE,
    FOREIGN KEY (kernel_id) REFERENCES rocpd_info_kernel_symbol{U} (id) ON UPDATE CASCADE,
    FOREIGN KEY (region_name_id) REFERENCES rocpd_string{U} (id) ON UPDATE CASCADE,
    FOREIGN KEY (event_id) REFERENCES rocpd_event{U} (id) ON UPDATE CASCADE
);

CREATE INDEX IF NOT EXISTS rocpd_kernel_dispatch_event{U} ON rocpd_kernel_dispatch{U} (event_id);
-- The writer finds a dispatch's row when its later passes arrive.
CREATE INDEX IF NOT EXISTS rocpd_kernel_dispatch_dispatch{U} ON rocpd_kernel_dispatch{U} (dispatch_id);
CREATE INDEX IF NOT EXISTS rocpd_pmc_event_event{U} ON rocpd_pmc_event{U} (event_id);

CREATE TABLE IF NOT EXISTS rocpd_info_queue{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "name" TEXT,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    "cuda_stream" INTEGER
);

CREATE TABLE IF NOT EXISTS rocpd_info_stream{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "name" TEXT,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    "cuda_stream" INTEGER
);

-- The modules a process loaded (kernel symbols' `code_object_id` is a row id here); then the
-- tables rocpd has and kreplay leaves empty (rocpd's views read them).
CREATE TABLE IF NOT EXISTS rocpd_info_code_object{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "agent_id" INTEGER,
    "uri" TEXT,
    "load_base" BIGINT,
    "load_size" BIGINT,
    "load_delta" BIGINT,
    "storage_type" TEXT,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

CREATE TABLE IF NOT EXISTS rocpd_track{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER,
    "tid" INTEGER,
    "name_id" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

CREATE TABLE IF NOT EXISTS rocpd_arg{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "event_id" INTEGER NOT NULL,
    "position" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "value" TEXT,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

CREATE TABLE IF NOT EXISTS rocpd_region{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "tid" INTEGER NOT NULL,
    "start" BIGINT NOT NULL,
    "end" BIGINT NOT NULL,
    "name_id" INTEGER NOT NULL,
    "event_id" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

CREATE TABLE IF NOT EXISTS rocpd_sample{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "track_id" INTEGER NOT NULL,
    "timestamp" BIGINT NOT NULL,
    "event_id" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

CREATE TABLE IF NOT EXISTS rocpd_memory_copy{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "tid" INTEGER,
    "start" BIGINT NOT NULL,
    "end" BIGINT NOT NULL,
    "name_id" INTEGER NOT NULL,
    "dst_agent_id" INTEGER,
    "dst_address" INTEGER,
    "src_agent_id" INTEGER,
    "src_address" INTEGER,
    "size" INTEGER NOT NULL,
    "queue_id" INTEGER,
    "stream_id" INTEGER,
    "region_name_id" INTEGER,
    "event_id" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

CREATE TABLE IF NOT EXISTS rocpd_memory_allocate{U} (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "tid" INTEGER,
    "agent_id" INTEGER,
    "type" TEXT,
    "level" TEXT,
    "start" BIGINT NOT NULL,
    "end" BIGINT NOT NULL,
    "address" INTEGER,
    "size" INTEGER NOT NULL,
    "queue_id" INTEGER,
    "stream_id" INTEGER,
    "event_id" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

CREATE TABLE IF NOT EXISTS kreplay_replay_cost (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "pid" INTEGER NOT NULL,
    "dispatch_id" INTEGER NOT NULL,
    "agent_id" INTEGER NOT NULL,
    "outcome" TEXT NOT NULL,
    "passes" INTEGER NOT NULL,
    "bytes_tracked" INTEGER NOT NULL,
    "bytes_snapshotted" INTEGER NOT NULL,
    "bytes_restored" INTEGER NOT NULL,
    "staging" TEXT NOT NULL,
    "drain_ns" INTEGER NOT NULL,
    "snapshot_ns" INTEGER NOT NULL,
    "pass_ns" JSONB NOT NULL,
    "restore_ns" INTEGER NOT NULL,
    "timing_execution_ns" INTEGER NOT NULL DEFAULT 0,
    "cache" TEXT NOT NULL,
    "sm_clock_min_mhz" INTEGER NOT NULL,
    "sm_clock_max_mhz" INTEGER NOT NULL,
    "memory_clock_min_mhz" INTEGER NOT NULL,
    "memory_clock_max_mhz" INTEGER NOT NULL
);

-- Every pass of every dispatch: its execution's times (the dispatch row carries the lowest pass).
CREATE TABLE IF NOT EXISTS kreplay_dispatch_pass (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "dispatch_row" INTEGER NOT NULL,
    "replay_pass" INTEGER,
    "start" BIGINT NOT NULL,
    "end" BIGINT NOT NULL,
    FOREIGN KEY (dispatch_row) REFERENCES rocpd_kernel_dispatch{U} (id) ON UPDATE CASCADE
);

-- Every counter value of every pass (rocpd_pmc_event holds one per dispatch and counter).
CREATE TABLE IF NOT EXISTS kreplay_pass_pmc (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "pass_id" INTEGER NOT NULL,
    "pmc_id" INTEGER NOT NULL,
    "value" REAL,
    FOREIGN KEY (pass_id) REFERENCES kreplay_dispatch_pass (id) ON UPDATE CASCADE,
    FOREIGN KEY (pmc_id) REFERENCES rocpd_info_pmc{U} (id) ON UPDATE CASCADE
);
CREATE INDEX IF NOT EXISTS kreplay_pass_pmc_pass ON kreplay_pass_pmc (pass_id);

CREATE TABLE IF NOT EXISTS kreplay_warning (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "pid" INTEGER NOT NULL,
    "message" TEXT NOT NULL
);

-- The passes (kind 0) and replay costs (kind 1) again, a page of rows to a compact block that
-- kreplay's readers decode instead of the rows (`db::blocks`): first_row to last_row are ids of
-- kreplay_dispatch_pass or kreplay_replay_cost rows; pmc_base is added to the rocpd_info_pmc
-- ids the block holds (a merge moves them). The markers (2), API calls (3), copies (4) and
-- allocations (5) likewise (`db::trace_blocks`), first_row to last_row ids of their events.
CREATE TABLE IF NOT EXISTS kreplay_record_block (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "kind" INTEGER NOT NULL,
    "first_row" INTEGER NOT NULL,
    "last_row" INTEGER NOT NULL,
    "count" INTEGER NOT NULL,
    "pmc_base" INTEGER NOT NULL DEFAULT 0,
    "data" BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS kreplay_record_block_rows ON kreplay_record_block (kind, last_row);

-- rocpd's un-suffixed names, read as rocpd's own views read them.
CREATE VIEW IF NOT EXISTS rocpd_metadata AS SELECT * FROM rocpd_metadata{U};
CREATE VIEW IF NOT EXISTS rocpd_string AS SELECT * FROM rocpd_string{U};
CREATE VIEW IF NOT EXISTS rocpd_info_node AS SELECT * FROM rocpd_info_node{U};
CREATE VIEW IF NOT EXISTS rocpd_info_process AS SELECT * FROM rocpd_info_process{U};
CREATE VIEW IF NOT EXISTS rocpd_info_thread AS SELECT * FROM rocpd_info_thread{U};
CREATE VIEW IF NOT EXISTS rocpd_info_agent AS SELECT * FROM rocpd_info_agent{U};
CREATE VIEW IF NOT EXISTS rocpd_info_pmc AS SELECT * FROM rocpd_info_pmc{U};
CREATE VIEW IF NOT EXISTS rocpd_info_kernel_symbol AS SELECT * FROM rocpd_info_kernel_symbol{U};
CREATE VIEW IF NOT EXISTS rocpd_event AS SELECT * FROM rocpd_event{U};
CREATE VIEW IF NOT EXISTS rocpd_pmc_event AS SELECT * FROM rocpd_pmc_event{U};
CREATE VIEW IF NOT EXISTS rocpd_kernel_dispatch AS SELECT * FROM rocpd_kernel_dispatch{U};
CREATE VIEW IF NOT EXISTS rocpd_info_queue AS SELECT * FROM rocpd_info_queue{U};
CREATE VIEW IF NOT EXISTS rocpd_info_stream AS SELECT * FROM rocpd_info_stream{U};
CREATE VIEW IF NOT EXISTS rocpd_info_code_object AS SELECT * FROM rocpd_info_code_object{U};
CREATE VIEW IF NOT EXISTS rocpd_track AS SELECT * FROM rocpd_track{U};
CREATE VIEW IF NOT EXISTS rocpd_arg AS SELECT * FROM rocpd_arg{U};
CREATE VIEW IF NOT EXISTS rocpd_region AS SELECT * FROM rocpd_region{U};
CREATE VIEW IF NOT EXISTS rocpd_sample AS SELECT * FROM rocpd_sample{U};
CREATE VIEW IF NOT EXISTS rocpd_memory_copy AS SELECT * FROM rocpd_memory_copy{U};
CREATE VIEW IF NOT EXISTS rocpd_memory_allocate AS SELECT * FROM rocpd_memory_allocate{U};
"#;
