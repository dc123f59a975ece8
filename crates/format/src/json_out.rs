//! rocprofv3's JSON output (`<name>_results.json`, reference §2.6) and a reader for tests.
//!
//! The layout is that of rocprofv3's writer (rocprofiler-sdk `source/lib/output/generateJSON.cpp`
//! and the cereal `save` functions it calls, `rocprofiler-sdk/cxx/serialization/save.hpp`):
//! `{"rocprofiler-sdk-tool": [ one object per process ]}`, each process object holding
//!
//! - `metadata`: `pid`, `ppid`, `hostname`, `command` (argv), `init_time`, `fini_time`;
//! - `agents`: one per device the process used, `id.handle` a non-zero handle (position in the
//!   list + 1) that `agent_id.handle` everywhere else refers to, `node_id` and `logical_node_id`
//!   the device ordinal (CSV's "Agent N"), `type` 2 (`ROCPROFILER_AGENT_TYPE_GPU`); a device only
//!   dispatches mention gets an entry with empty names;
//! - `counters`: one entry per (agent, counter); `id.handle` is what counter records refer to;
//! - `strings`: `buffer_records[kind]` and `callback_records[kind]` = `{kind, operations}`, indexed
//!   by rocprofiler-sdk's `rocprofiler_buffer_tracing_kind_t` / `rocprofiler_callback_tracing_kind_t`
//!   values (`fwd.h`), `operations[op]` indexed by operation value; `marker_api`,
//!   `correlation_id.external`, `counters.dimension_ids`, `pc_sample_*`, `att_filenames`,
//!   `code_object_snapshot_filenames`;
//! - `code_objects`, `kernel_symbols` (index = kernel id, see below), `host_functions`;
//! - `summary`: `[{domain, stats}]` per traced domain, durations by name (`statistics.hpp`);
//! - `callback_records.counter_collection`: one record per pass of a dispatch that collected
//!   counters;
//! - `buffer_records.kernel_dispatch` (one per pass, `kind` 11 = `KERNEL_DISPATCH`, `operation`
//!   2 = `KERNEL_DISPATCH_COMPLETE`, `stream_id`), and the other `buffer_records` lists
//!   (`rocdecode_api`, `pc_sample_host_trap`, ...) empty;
//! - our extension `kreplay` (`replay_costs`, `warnings`).
//!
//! `replay_pass` (0-based; our extension) is on every counter and kernel-dispatch record of a
//! kernel-replay run, and on none otherwise. The records carry no run mode, so a document is a
//! kernel-replay run when any dispatch of any of its processes has a pass; a dispatch that ran
//! once there (declined, single pass, trace only: `replay_pass` `None`) is written as pass 0.
//!
//! What differs from rocprofv3, and why:
//! - Keys are sorted in every object (rocprofv3 writes them in declaration order): deterministic
//!   bytes, and JSON readers do not depend on key order.
//! - `kernel_symbols[i]` is the kernel whose id is `i`, slot 0 and gaps being empty placeholders
//!   (rocprofv3's default-constructed symbol: zeros, empty names, `kernel_id` 0), and the list is
//!   long enough for every kernel id a dispatch refers to, described or not. Our kernel ids are
//!   small and dense (numbered from 1 per process); ids so sparse that the list would be more
//!   than 16 × their number + 4096 long are renumbered 1, 2, ... in first-seen order (symbols
//!   first), consistently in every record; `kernel_object` keeps our id either way.
//! - `queue_id.handle` is the stream id (CUDA has no queue apart from the stream), so it equals
//!   `stream_id.handle`.
//! - The `size` fields (sizes of rocprofiler-sdk's C structs) are placeholders computed from
//!   their field lists, and agent fields that only AMD devices have (`capability`, firmware
//!   versions, ...) are 0. `host_functions` are made from the runtime launch calls' `func`
//!   arguments (`-r`/`-s`; empty without them), see `host_functions`.
//! - `code_objects[i]` is the module loaded as code object `i` (rocprofiler-sdk's load record:
//!   storage type MEMORY, the `memory://` uri, the image's address and size), slot 0 and gaps
//!   being rocprofv3's placeholder, as `kernel_symbols`; both names of its agent field are
//!   written (`agent_id`, and `rocp_agent` with `hsa_agent` 0 as earlier rocprofiler-sdk wrote).
//! - Counter records keep `arch_vgpr_count`, `accum_vgpr_count`, `sgpr_count` and
//!   `lds_block_size_v` (the published schema, `source/docs/rocprofv3-schema.json`, requires
//!   them; the current writer dropped them) besides the writer's `stream_id`.
//! - `strings.buffer_records` and `strings.callback_records` list every kind's name, but
//!   operation names only for the kernel-dispatch kind, the one whose codes our records use
//!   (rocprofv3 lists every HSA/HIP/marker API name).
//! - `summary` is always written (rocprofv3 only with `--stats`/`--summary`, which kreplay's
//!   records do not carry), counts each dispatch once (its lowest pass: replayed passes are not
//!   what the application ran; the rule of the `--stats` files, per process here),
//!   names kernels by their formatted (demangled) name, and keeps `sum` and `sqr` exact
//!   (rocprofv3's `uint64_t` wrap past 2^64; ours saturate at 2^128).
//!
//! The document is streamed, one array element at a time.

mod batch;
mod code_objects;
mod counter_array;
mod dispatch_json;
mod document;
mod host_functions;
mod kinds;
mod parts;
mod process;
mod raw;
mod read;
mod spool;
mod summary;
mod tables;
mod trace_json;

#[cfg(test)]
pub(crate) use document::write_json;
pub(crate) use document::write_json_with;
pub use read::{read_json_counter_records, JsonCounterRecord};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_code_objects;
#[cfg(test)]
mod tests_traces;
