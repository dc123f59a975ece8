//! The views every kreplay database holds, created after the tables of [`crate::schema`].
//!
//! rocprofv3 writes its data views and summary views into each database (rocprofiler-sdk's
//! `data_views.sql` and `rocpd_views.sql`), so that plain `sqlite3` queries of them work; these
//! are the same views by name and column, written here from their documentation on kreplay's
//! rows. Views over data kreplay does not record (arguments, PC samples) exist and are empty;
//! `regions`, `samples` and `regions_and_samples` show the NVTX markers of `--marker-trace`,
//! `memory_copies` and `memory_allocations` the copies and allocations of the memory traces
//! (the host side a `CPU` agent row). `kernels` and
//! `counters_collection` carry rocpd's columns plus kreplay's own (`agent_id`, `replay_pass`,
//! `grid_size_x`, ...); in them `agent_id`, `kernel_id`, `queue_id` and `stream_id` are the
//! producer's ids (device ordinal, kernel id, CUDA stream), as in the CSV, where rocpd's hold
//! row ids. `kreplay_pass_counters` is kreplay's: every pass's value of every counter.

/// The views rocprofv3 writes into its databases (`data_views.sql`, `rocpd_views.sql`), each of
/// which a kreplay database answers.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const ROCPD_VIEWS: &[&str] = &[
    "code_objects",
    "kernel_symbols",
    "processes",
    "threads",
    "regions",
    "region_args",
    "samples",
    "sample_regions",
    "regions_and_samples",
    "kernels",
    "pmc_info",
    "pmc_events",
    "events_args",
    "stream_args",
    "memory_copies",
    "memory_allocations",
    "scratch_memory",
    "counters_collection",
    "pc_sampling",
    "top_kernels",
    "busy",
    "top",
];

/// Creates the views (all `IF NOT EXISTS`: a file gets them once).
pub(crate) const CREATE_VIEWS: &str = r#"
CREATE VIEW IF NOT EXISTS code_objects AS
SELECT CO.id, CO.guid, CO.nid, P.pid, A.absolute_index AS agent_abs_index, CO.uri, CO.load_base,
    CO.load_size, CO.load_delta, CO.storage_type AS storage_type_str,
    JSON_EXTRACT(CO.extdata, '$.size') AS code_object_size,
    JSON_EXTRACT(CO.extdata, '$.storage_type') AS storage_type,
    JSON_EXTRACT(CO.extdata, '$.memory_base') AS memory_base,
    JSON_EXTRACT(CO.extdata, '$.memory_size') AS memory_size
FROM rocpd_info_code_object CO
JOIN rocpd_info_agent A ON A.id = CO.agent_id AND A.guid = CO.guid
JOIN rocpd_info_process P ON P.id = CO.pid AND P.guid = CO.guid;

CREATE VIEW IF NOT EXISTS kernel_symbols AS
SELECT KS.id, KS.guid, KS.nid, P.pid, KS.code_object_id, KS.kernel_name, KS.display_name,
    KS.kernel_object, KS.kernarg_segment_size, KS.kernarg_segment_alignment,
    KS.group_segment_size, KS.private_segment_size, KS.sgpr_count, KS.arch_vgpr_count,
    KS.accum_vgpr_count,
    JSON_EXTRACT(KS.extdata, '$.size') AS kernel_symbol_size,
    JSON_EXTRACT(KS.extdata, '$.kernel_id') AS kernel_id,
    JSON_EXTRACT(KS.extdata, '$.kernel_code_entry_byte_offset') AS kernel_code_entry_byte_offset,
    JSON_EXTRACT(KS.extdata, '$.formatted_kernel_name') AS formatted_kernel_name,
    JSON_EXTRACT(KS.extdata, '$.demangled_kernel_name') AS demangled_kernel_name,
    JSON_EXTRACT(KS.extdata, '$.truncated_kernel_name') AS truncated_kernel_name,
    JSON_EXTRACT(KS.extdata, '$.kernel_address.handle') AS kernel_address
FROM rocpd_info_kernel_symbol KS
JOIN rocpd_info_process P ON P.id = KS.pid AND P.guid = KS.guid;

CREATE VIEW IF NOT EXISTS processes AS
SELECT N.id AS nid, N.machine_id, N.system_name, N.hostname, N.release AS system_release,
    N.version AS system_version, P.guid, P.ppid, P.pid, P.init, P."start", P."end", P.fini,
    P.command
FROM rocpd_info_process P
JOIN rocpd_info_node N ON N.id = P.nid;

CREATE VIEW IF NOT EXISTS threads AS
SELECT N.id AS nid, N.machine_id, N.system_name, N.hostname, N.release AS system_release,
    N.version AS system_version, P.guid, P.ppid, P.pid, T.tid, T."start", T."end", T.name
FROM rocpd_info_thread T
JOIN rocpd_info_process P ON P.id = T.pid AND P.guid = T.guid
JOIN rocpd_info_node N ON N.id = T.nid;

CREATE VIEW IF NOT EXISTS regions AS
SELECT R.id, R.guid,
    (SELECT string FROM rocpd_string C WHERE C.id = E.category_id AND C.guid = E.guid) AS category,
    S.string AS name, R.nid, P.pid, T.tid, R."start", R."end", R."end" - R."start" AS duration,
    R.event_id, E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id, E.extdata,
    E.call_stack, E.line_info
FROM rocpd_region R
JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
JOIN rocpd_string S ON S.id = R.name_id AND S.guid = R.guid
JOIN rocpd_info_process P ON P.id = R.pid AND P.guid = R.guid
JOIN rocpd_info_thread T ON T.id = R.tid AND T.guid = R.guid;

CREATE VIEW IF NOT EXISTS region_args AS
SELECT R.id, R.guid, R.nid, P.pid, A.type, A.name, A.value
FROM rocpd_region R
JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
JOIN rocpd_arg A ON A.event_id = E.id AND A.guid = R.guid
JOIN rocpd_info_process P ON P.id = R.pid AND P.guid = R.guid;

CREATE VIEW IF NOT EXISTS samples AS
SELECT SA.id, SA.guid,
    (SELECT string FROM rocpd_string C WHERE C.id = E.category_id AND C.guid = E.guid) AS category,
    (SELECT string FROM rocpd_string C WHERE C.id = TR.name_id AND C.guid = TR.guid) AS name,
    TR.nid, P.pid, T.tid, SA.timestamp, SA.event_id, E.stack_id, E.parent_stack_id,
    E.correlation_id AS corr_id, E.extdata, E.call_stack, E.line_info
FROM rocpd_sample SA
JOIN rocpd_track TR ON TR.id = SA.track_id AND TR.guid = SA.guid
JOIN rocpd_event E ON E.id = SA.event_id AND E.guid = SA.guid
JOIN rocpd_info_process P ON P.id = TR.pid AND P.guid = TR.guid
JOIN rocpd_info_thread T ON T.id = TR.tid AND T.guid = TR.guid;

CREATE VIEW IF NOT EXISTS sample_regions AS
SELECT id, guid, category, name, nid, pid, tid, timestamp AS "start", timestamp AS "end",
    0 AS duration, event_id, stack_id, parent_stack_id, corr_id, extdata, call_stack, line_info
FROM samples;

CREATE VIEW IF NOT EXISTS regions_and_samples AS
SELECT * FROM regions UNION ALL SELECT * FROM sample_regions;

-- One row per dispatch (the application's own execution: kreplay_pass_counters and
-- kreplay_dispatch_pass have every pass).
CREATE VIEW IF NOT EXISTS kernels AS
SELECT K.id, K.guid, T.tid,
    (SELECT string FROM rocpd_string C WHERE C.id = E.category_id AND C.guid = E.guid) AS category,
    R.string AS region, S.display_name AS name, K.nid, P.pid,
    A.absolute_index AS agent_id, A.absolute_index AS agent_abs_index,
    A.logical_index AS agent_log_index, A.type_index AS agent_type_index, A.type AS agent_type,
    S.code_object_id, S.kernel_object AS kernel_id, K.dispatch_id, K.replay_pass,
    ST.cuda_stream AS stream_id, Q.cuda_stream AS queue_id, Q.name AS queue, ST.name AS stream,
    K."start", K."end", K."end" - K."start" AS duration,
    K.grid_size_x AS grid_x, K.grid_size_y AS grid_y, K.grid_size_z AS grid_z,
    K.workgroup_size_x AS workgroup_x, K.workgroup_size_y AS workgroup_y,
    K.workgroup_size_z AS workgroup_z,
    K.group_segment_size AS lds_size, K.private_segment_size AS scratch_size,
    S.arch_vgpr_count AS vgpr_count, S.accum_vgpr_count, S.sgpr_count,
    S.group_segment_size AS static_lds_size, S.private_segment_size AS static_scratch_size,
    E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id,
    E.correlation_id AS correlation_id, S.kernel_name AS mangled_name,
    K.grid_size_x * K.grid_size_y * K.grid_size_z AS grid_size,
    K.grid_size_x, K.grid_size_y, K.grid_size_z,
    K.workgroup_size_x * K.workgroup_size_y * K.workgroup_size_z AS workgroup_size,
    K.workgroup_size_x, K.workgroup_size_y, K.workgroup_size_z,
    K.group_segment_size AS lds_block_size, K.event_id
FROM rocpd_kernel_dispatch K
JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid
JOIN rocpd_string R ON R.id = K.region_name_id AND R.guid = K.guid
JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id AND ST.guid = K.guid
LEFT JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid
JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid
JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid;

CREATE VIEW IF NOT EXISTS pmc_info AS
SELECT PMC_I.id, PMC_I.guid, PMC_I.nid, P.pid, A.absolute_index AS agent_abs_index,
    PMC_I.is_constant, PMC_I.is_derived, PMC_I.name, PMC_I.description, PMC_I.block,
    PMC_I.expression
FROM rocpd_info_pmc PMC_I
JOIN rocpd_info_agent A ON A.id = PMC_I.agent_id AND A.guid = PMC_I.guid
JOIN rocpd_info_process P ON P.id = PMC_I.pid AND P.guid = PMC_I.guid;

CREATE VIEW IF NOT EXISTS pmc_events AS
SELECT PMC_E.id, PMC_E.guid, PMC_E.pmc_id, E.id AS event_id,
    (SELECT string FROM rocpd_string C WHERE C.id = E.category_id AND C.guid = E.guid) AS category,
    (SELECT display_name FROM rocpd_info_kernel_symbol KS WHERE KS.id = K.kernel_id AND KS.guid = K.guid) AS name,
    K.nid, P.pid, K.dispatch_id, K."start", K."end", K."end" - K."start" AS duration,
    PMC_I.name AS counter_name, PMC_E.value AS counter_value
FROM rocpd_pmc_event PMC_E
JOIN rocpd_info_pmc PMC_I ON PMC_I.id = PMC_E.pmc_id AND PMC_I.guid = PMC_E.guid
JOIN rocpd_event E ON E.id = PMC_E.event_id AND E.guid = PMC_E.guid
JOIN rocpd_kernel_dispatch K ON K.event_id = PMC_E.event_id AND K.guid = PMC_E.guid
JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid;

CREATE VIEW IF NOT EXISTS events_args AS
SELECT E.id AS event_id,
    (SELECT string FROM rocpd_string C WHERE C.id = E.category_id AND C.guid = E.guid) AS category,
    E.stack_id, E.parent_stack_id, E.correlation_id, A.position AS arg_position,
    A.type AS arg_type, A.name AS arg_name, A.value AS arg_value, E.call_stack, E.line_info,
    A.extdata
FROM rocpd_event E
JOIN rocpd_arg A ON A.event_id = E.id AND A.guid = E.guid;

CREATE VIEW IF NOT EXISTS stream_args AS
SELECT A.id AS argument_id, A.event_id, A.position AS arg_position, A.type AS arg_type,
    A.value AS arg_value, JSON_EXTRACT(A.extdata, '$.stream_id') AS stream_id, S.nid, P.pid,
    S.name AS stream_name, S.extdata
FROM rocpd_arg A
JOIN rocpd_info_stream S ON S.id = JSON_EXTRACT(A.extdata, '$.stream_id') AND S.guid = A.guid
JOIN rocpd_info_process P ON P.id = S.pid AND P.guid = S.guid
WHERE A.name = 'stream';

CREATE VIEW IF NOT EXISTS memory_copies AS
SELECT M.id, M.guid,
    (SELECT string FROM rocpd_string C WHERE C.id = E.category_id AND C.guid = E.guid) AS category,
    M.nid, P.pid, T.tid, M."start", M."end", M."end" - M."start" AS duration, S.string AS name,
    R.string AS region_name, M.stream_id, M.queue_id, ST.name AS stream_name,
    Q.name AS queue_name, M.size, DST.name AS dst_device,
    DST.absolute_index AS dst_agent_abs_index, DST.logical_index AS dst_agent_log_index,
    DST.type_index AS dst_agent_type_index, DST.type AS dst_agent_type, M.dst_address,
    SRC.name AS src_device, SRC.absolute_index AS src_agent_abs_index,
    SRC.logical_index AS src_agent_log_index, SRC.type_index AS src_agent_type_index,
    SRC.type AS src_agent_type, M.src_address, E.stack_id, E.parent_stack_id,
    E.correlation_id AS corr_id
FROM rocpd_memory_copy M
JOIN rocpd_string S ON S.id = M.name_id AND S.guid = M.guid
LEFT JOIN rocpd_string R ON R.id = M.region_name_id AND R.guid = M.guid
JOIN rocpd_info_agent DST ON DST.id = M.dst_agent_id AND DST.guid = M.guid
JOIN rocpd_info_agent SRC ON SRC.id = M.src_agent_id AND SRC.guid = M.guid
LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid
LEFT JOIN rocpd_info_stream ST ON ST.id = M.stream_id AND ST.guid = M.guid
JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid;

CREATE VIEW IF NOT EXISTS memory_allocations AS
SELECT M.id, M.guid,
    (SELECT string FROM rocpd_string C WHERE C.id = E.category_id AND C.guid = E.guid) AS category,
    M.nid, P.pid, T.tid, M."start", M."end", M."end" - M."start" AS duration, M.type, M.level,
    A.name AS agent_name, A.absolute_index AS agent_abs_index,
    A.logical_index AS agent_log_index, A.type_index AS agent_type_index,
    A.type AS agent_type, M.address, M.size, M.queue_id, Q.name AS queue_name, M.stream_id,
    ST.name AS stream_name, E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id
FROM rocpd_memory_allocate M
LEFT JOIN rocpd_info_agent A ON A.id = M.agent_id AND A.guid = M.guid
LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid
LEFT JOIN rocpd_info_stream ST ON ST.id = M.stream_id AND ST.guid = M.guid
JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid;

CREATE VIEW IF NOT EXISTS scratch_memory AS
SELECT M.id, M.guid, M.nid, P.pid, M.type AS operation, A.name AS agent_name,
    A.absolute_index AS agent_abs_index, A.logical_index AS agent_log_index,
    A.type_index AS agent_type_index, A.type AS agent_type, M.queue_id, T.tid,
    JSON_EXTRACT(M.extdata, '$.flags') AS alloc_flags, M."start", M."end",
    M."end" - M."start" AS duration, M.size, M.address, E.correlation_id, E.stack_id,
    E.parent_stack_id, E.correlation_id AS corr_id,
    (SELECT string FROM rocpd_string C WHERE C.id = E.category_id AND C.guid = E.guid) AS category,
    E.extdata AS event_extdata
FROM rocpd_memory_allocate M
LEFT JOIN rocpd_info_agent A ON A.id = M.agent_id AND A.guid = M.guid
JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid
WHERE M.level = 'SCRATCH';

-- One row per dispatch and counter, grouped by dispatch and summed as rocpd's view is: the
-- database holds each counter once per dispatch (rocpd_pmc_event, the lowest pass that measured
-- it: `replay_pass`), so the sum is that value, never a sum over passes.
CREATE VIEW IF NOT EXISTS counters_collection AS
SELECT MIN(PMC_E.id) AS id, PMC_E.guid, K.dispatch_id, S.kernel_object AS kernel_id,
    E.id AS event_id, E.correlation_id, E.stack_id, E.parent_stack_id, P.pid, T.tid,
    A.absolute_index AS agent_id, A.absolute_index AS agent_abs_index,
    A.logical_index AS agent_log_index, A.type_index AS agent_type_index, A.type AS agent_type,
    ST.cuda_stream AS queue_id, ST.cuda_stream AS stream_id,
    K.grid_size_x, K.grid_size_y, K.grid_size_z,
    K.grid_size_x * K.grid_size_y * K.grid_size_z AS grid_size, S.display_name AS kernel_name,
    (SELECT string FROM rocpd_string C WHERE C.id = K.region_name_id AND C.guid = K.guid) AS kernel_region,
    K.workgroup_size_x, K.workgroup_size_y, K.workgroup_size_z,
    K.workgroup_size_x * K.workgroup_size_y * K.workgroup_size_z AS workgroup_size,
    K.group_segment_size AS lds_block_size, K.private_segment_size AS scratch_size,
    S.arch_vgpr_count AS vgpr_count, S.accum_vgpr_count, S.sgpr_count,
    PMC_I.name AS counter_name, PMC_I.symbol AS counter_symbol, PMC_I.component,
    PMC_I.description, PMC_I.block, PMC_I.expression, PMC_I.value_type,
    PMC_I.id AS counter_id, SUM(PMC_E.value) AS value, K."start", K."end",
    PMC_I.is_constant, PMC_I.is_derived, K."end" - K."start" AS duration,
    (SELECT string FROM rocpd_string C WHERE C.id = E.category_id AND C.guid = E.guid) AS category,
    K.nid, E.extdata, S.code_object_id,
    MIN(JSON_EXTRACT(PMC_E.extdata, '$.replay_pass')) AS replay_pass
FROM rocpd_pmc_event PMC_E
JOIN rocpd_info_pmc PMC_I ON PMC_I.id = PMC_E.pmc_id AND PMC_I.guid = PMC_E.guid
JOIN rocpd_event E ON E.id = PMC_E.event_id AND E.guid = PMC_E.guid
JOIN rocpd_kernel_dispatch K ON K.event_id = PMC_E.event_id AND K.guid = PMC_E.guid
JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid
JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid
LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id AND ST.guid = K.guid
GROUP BY PMC_E.guid, K.dispatch_id, PMC_I.name, K.agent_id;

-- PC samples: kreplay takes none (rocpd's columns, always empty).
CREATE VIEW IF NOT EXISTS pc_sampling AS
SELECT SA.id, SA.guid, SA.timestamp, TR.nid, P.pid, T.tid, SA.track_id, SA.event_id,
    E.stack_id, E.correlation_id, NULL AS sampling_method, NULL AS instruction,
    NULL AS instruction_comment, NULL AS code_object_id, NULL AS code_object_offset,
    NULL AS dispatch_id, NULL AS exec_mask, NULL AS workgroup_id_x, NULL AS workgroup_id_y,
    NULL AS workgroup_id_z, NULL AS wave_in_group
FROM rocpd_sample SA
JOIN rocpd_event E ON E.id = SA.event_id
JOIN rocpd_track TR ON TR.id = SA.track_id
JOIN rocpd_info_process P ON P.id = TR.pid
JOIN rocpd_info_thread T ON T.id = TR.tid
WHERE 0;

-- rocpd's summary views: kernels by total time (durations in microseconds), busy time per
-- agent, every operation by total time. One row per dispatch, so calls are dispatches.
CREATE VIEW IF NOT EXISTS top_kernels AS
SELECT S.display_name AS name, COUNT(K.kernel_id) AS total_calls,
    SUM(K."end" - K."start") / 1000.0 AS total_duration,
    (SUM(K."end" - K."start") / COUNT(K.kernel_id)) / 1000.0 AS average,
    SUM(K."end" - K."start") * 100.0 / (SELECT SUM(D."end" - D."start") FROM rocpd_kernel_dispatch D) AS percentage
FROM rocpd_kernel_dispatch K
JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
GROUP BY name
ORDER BY total_duration DESC;

CREATE VIEW IF NOT EXISTS busy AS
SELECT B.agent_id, AG.type, B.GpuTime, W.WallTime, B.GpuTime * 1.0 / W.WallTime AS Busy
FROM (
    SELECT agent_id, guid, SUM("end" - "start") AS GpuTime FROM (
        SELECT agent_id, guid, "start", "end" FROM rocpd_kernel_dispatch
        UNION ALL
        SELECT dst_agent_id AS agent_id, guid, "start", "end" FROM rocpd_memory_copy)
    GROUP BY agent_id, guid) B
JOIN (
    SELECT MAX("end") - MIN("start") AS WallTime FROM (
        SELECT "start", "end" FROM rocpd_kernel_dispatch
        UNION ALL
        SELECT "start", "end" FROM rocpd_memory_copy)) W ON 1 = 1
JOIN rocpd_info_agent AG ON AG.id = B.agent_id AND AG.guid = B.guid;

CREATE VIEW IF NOT EXISTS top AS
SELECT name, COUNT(*) AS total_calls, SUM(duration) / 1000.0 AS total_duration,
    (SUM(duration) / COUNT(*)) / 1000.0 AS average,
    SUM(duration) * 100.0 / total_time AS percentage
FROM (
    SELECT KS.display_name AS name, KD."end" - KD."start" AS duration
    FROM rocpd_kernel_dispatch KD
    JOIN rocpd_info_kernel_symbol KS ON KS.id = KD.kernel_id AND KS.guid = KD.guid
    UNION ALL
    SELECT RS.string AS name, MC."end" - MC."start" AS duration
    FROM rocpd_memory_copy MC JOIN rocpd_string RS ON RS.id = MC.name_id AND RS.guid = MC.guid
    UNION ALL
    SELECT RS.string AS name, RR."end" - RR."start" AS duration
    FROM rocpd_region RR JOIN rocpd_string RS ON RS.id = RR.name_id AND RS.guid = RR.guid
) OPERATIONS
CROSS JOIN (
    SELECT SUM("end" - "start") AS total_time FROM (
        SELECT "start", "end" FROM rocpd_kernel_dispatch
        UNION ALL SELECT "start", "end" FROM rocpd_memory_copy
        UNION ALL SELECT "start", "end" FROM rocpd_region)
) TOTAL
GROUP BY name
ORDER BY total_duration DESC;

-- kreplay's: one row per dispatch, replay pass and counter, with that pass's execution times
-- (kernel replay: pass 0 is the application's own launch; NULL without kernel replay).
CREATE VIEW IF NOT EXISTS kreplay_pass_counters AS
SELECT PP.id, PP.guid, P.pid, T.tid, K.dispatch_id, DP.replay_pass,
    A.absolute_index AS agent_id, S.kernel_object AS kernel_id, S.display_name AS kernel_name,
    E.correlation_id, ST.cuda_stream AS stream_id, PMC_I.name AS counter_name,
    PMC_I.symbol AS counter_symbol, PP.value, DP."start", DP."end",
    K.grid_size_x * K.grid_size_y * K.grid_size_z AS grid_size,
    K.workgroup_size_x * K.workgroup_size_y * K.workgroup_size_z AS workgroup_size,
    DP."end" - DP."start" AS duration, K.id AS dispatch_row, DP.id AS pass_id
FROM kreplay_pass_pmc PP
JOIN kreplay_dispatch_pass DP ON DP.id = PP.pass_id
JOIN rocpd_kernel_dispatch K ON K.id = DP.dispatch_row AND K.guid = DP.guid
JOIN rocpd_info_pmc PMC_I ON PMC_I.id = PP.pmc_id AND PMC_I.guid = PP.guid
JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid
JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid
LEFT JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid
LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id AND ST.guid = K.guid;
"#;
