use super::document::write_document;
use super::kinds::{BUFFER_TRACING_KINDS, CALLBACK_TRACING_KINDS, TOOL_KEY};
use super::summary::StatsOfKernel;
use super::*;
use crate::db::read_databases;
use crate::files::write_file;
use crate::output::{write_outputs, OutputFormat};
use crate::records::*;
use crate::run::{ProcessRun, RunData};
use crate::stats::DurationStats;
use crate::testdata::*;
use crate::{DbWriter, RecordSink};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::io::{self, Write};
use std::path::PathBuf;

fn json_of(records: Vec<Record>) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    let writer = DbWriter::create(&db, || {}).unwrap();
    for record in records {
        writer.send(record);
    }
    writer.finish().unwrap();
    let run = read_databases(std::slice::from_ref(&db)).unwrap();
    let written = write_outputs(&run, dir.path(), "out", &[OutputFormat::Json]).unwrap();
    assert_eq!(written, vec![dir.path().join("out_results.json")]);
    let json = written[0].clone();
    (dir, db, json)
}

/// The document of `run`, parsed.
fn document_of(run: &RunData) -> Value {
    let mut bytes = Vec::new();
    write_document(run, &mut bytes).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// The first process of the recorded run's document (written from the records directly).
fn recorded_process() -> Value {
    let run = RunData::from_records(recorded_run(8));
    document_of(&run)[TOOL_KEY][0].clone()
}

fn list(value: &Value) -> &Vec<Value> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {value}"))
}

/// The recorded run, plus a process that exercises what it lacks (counters and an agent only
/// dispatches mention, an unknown kernel, values JSON writes as null, strings to escape), plus
/// an empty process.
fn representative_run() -> RunData {
    let mut run = RunData::from_records(recorded_run(8));
    let mut odd = RunData::from_records(recorded_run(9)).processes.remove(0);
    odd.process.hostname = "n\"ode\\\n\u{1}é€😀".to_string();
    odd.process.command.push("--name=\"a b\"\t".to_string());
    odd.kernels[0].demangled_name = "void f<\"x\">(int, char const*)".to_string();
    odd.counters.truncate(1);
    let mut extra = dispatch(9, 4, None, Vec::new());
    extra.agent_id = 5;
    extra.kernel_id = 99;
    extra.start_ns = u64::MAX;
    extra.counters = [f64::NAN, f64::INFINITY, -0.0, -1.5e-300, 1e300, 0.1]
        .into_iter()
        .enumerate()
        .map(|(i, value)| sample(&format!("UNDECLARED_{i}"), value))
        .collect();
    odd.dispatches.push(extra);
    odd.warnings.push(Warning {
        message: "line\nbreak \"quoted\" </script>".to_string(),
    });
    run.processes.push(odd);
    run.processes.push(ProcessRun::new(process(3)));
    run
}

/// A writer that fails like a full disk once `left` bytes are written.
struct FullAfter<W> {
    out: W,
    left: usize,
}

impl<W: Write> Write for FullAfter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.len() > self.left {
            return Err(io::ErrorKind::StorageFull.into());
        }
        self.left -= buf.len();
        self.out.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// `strings.buffer_records` and `strings.callback_records` as rocprofv3 would index them,
/// written out: what the byte-exact tests expect.
fn expected_kind_tables() -> String {
    let table = |kinds: &[&str], kernel_dispatch: usize| {
        let entries: Vec<String> = kinds
            .iter()
            .enumerate()
            .map(|(kind, name)| {
                let operations = if kind == kernel_dispatch {
                    r#""KERNEL_DISPATCH_NONE","KERNEL_DISPATCH_ENQUEUE","KERNEL_DISPATCH_COMPLETE""#
                } else {
                    ""
                };
                format!(r#"{{"kind":"{name}","operations":[{operations}]}}"#)
            })
            .collect();
        entries.join(",")
    };
    format!(
        r#""buffer_records":[{}],"callback_records":[{}]"#,
        table(&BUFFER_TRACING_KINDS, 11),
        table(&CALLBACK_TRACING_KINDS, 12)
    )
}

#[test]
fn a_small_run_is_written_byte_for_byte() {
    let mut run = ProcessRun::new(process(4));
    run.process.end_ns = 2_000;
    run.agents.push(AgentInfo {
        agent_id: 0,
        name: "NVIDIA H200".to_string(),
        chip: "GH100".to_string(),
        sm_count: 132,
        global_memory_bytes: 1 << 30,
        pci_location: "0000:1b:00".to_string(),
        max_threads_per_sm: 2048,
        shared_memory_per_sm_bytes: 233_472,
    });
    run.code_objects
        .push(CodeObject::from_memory(1, 0, 4, 0x1000, 64));
    run.kernels.push(KernelSymbol {
        kernel_id: 1,
        code_object_id: 1,
        mangled_name: "_Z1kv".to_string(),
        demangled_name: "k()".to_string(),
        registers: 16,
        static_shared_bytes: 64,
        local_bytes: 8,
        param_bytes: 4,
    });
    run.counters
        .push(counter("SQ_WAVES", "sm__warps_launched.sum"));
    let mut first = dispatch(4, 1, Some(0), vec![sample("SQ_WAVES", 2.5)]);
    first.kernel_id = 1;
    first.grid = [2, 1, 1];
    first.block = [32, 1, 1];
    let mut once = dispatch(4, 2, None, Vec::new());
    once.kernel_id = 1;
    once.grid = [1, 1, 1];
    once.block = [32, 1, 1];
    once.end_ns = once.start_ns + 70;
    run.dispatches = vec![first, once];
    let mut streamed = Vec::new();
    write_document(
        &RunData {
            processes: vec![run],
        },
        &mut streamed,
    )
    .unwrap();
    let dispatch_info = |id: u64| {
        format!(
            r#"{{"agent_id":{{"handle":1}},"dispatch_id":{id},"grid_size":{{"x":{},"y":1,"z":1}},"group_segment_size":576,"kernel_id":1,"private_segment_size":8,"queue_id":{{"handle":7}},"size":128,"workgroup_size":{{"x":32,"y":1,"z":1}}}}"#,
            if id == 1 { 64 } else { 32 }
        )
    };
    let expected = [
        r#"{"rocprofiler-sdk-tool":[{"agents":[{"array_count":0,"caches_count":0,"capability":0,"cpu_core_id_base":0,"cpu_cores_count":0,"cu_count":132,"cu_per_engine":0,"cu_per_simd_array":0,"device_id":0,"domain":0,"drm_render_minor":0,"family_id":0,"fw_version":0,"gds_size_in_kb":0,"gfx_target_version":0,"gpu_id":0,"grid_max_dim":{"x":2147483647,"y":65535,"z":65535},"grid_max_size":4294967295,"hive_id":0,"id":{"handle":1},"io_links_count":0,"lds_size_in_kb":228,"local_mem_size":1073741824,"location_id":6912,"logical_node_id":0,"logical_node_type_id":0,"max_engine_clk_ccompute":0,"max_engine_clk_fcompute":0,"max_slots_scratch_cu":0,"max_waves_per_cu":64,"max_waves_per_simd":16,"mem_banks_count":0,"model_name":"NVIDIA H200","name":"GH100","node_id":0,"num_cp_queues":0,"num_gws":0,"num_sdma_engines":0,"num_sdma_queues_per_engine":0,"num_sdma_xgmi_engines":0,"num_shader_banks":0,"num_xcc":1,"pci_location":"0000:1b:00","product_name":"NVIDIA H200","runtime_visibility":{"hip":0,"hsa":0,"rccl":0,"rocdecode":0},"sdma_fw_version":0,"simd_arrays_per_engine":0,"simd_count":528,"simd_id_base":0,"simd_per_cu":4,"size":512,"type":2,"uuid":"","vendor_id":4318,"vendor_name":"NVIDIA","wave_front_size":32,"workgroup_max_dim":{"x":1024,"y":1024,"z":64},"workgroup_max_size":1024}],"#.to_string(),
        r#""buffer_records":{"hip_api":[],"hsa_api":[],"kernel_dispatch":["#.to_string(),
        format!(r#"{{"correlation_id":{{"ancestor":0,"external":0,"internal":101}},"dispatch_info":{},"end_timestamp":6050,"kind":11,"operation":2,"replay_pass":0,"size":192,"start_timestamp":6000,"stream_id":{{"handle":7}},"thread_id":5}},"#, dispatch_info(1)),
        format!(r#"{{"correlation_id":{{"ancestor":0,"external":0,"internal":102}},"dispatch_info":{},"end_timestamp":7070,"kind":11,"operation":2,"replay_pass":0,"size":192,"start_timestamp":7000,"stream_id":{{"handle":7}},"thread_id":5}}],"#, dispatch_info(2)),
        r#""marker_api":[],"memory_allocation":[],"memory_copy":[],"pc_sample_host_trap":[],"pc_sample_stochastic":[],"rccl_api":[],"rocdecode_api":[],"rocjpeg_api":[],"scratch_memory":[]},"#.to_string(),
        format!(r#""callback_records":{{"counter_collection":[{{"accum_vgpr_count":0,"arch_vgpr_count":16,"dispatch_data":{{"correlation_id":{{"ancestor":0,"external":0,"internal":101}},"dispatch_info":{},"end_timestamp":6050,"size":176,"start_timestamp":6000}},"lds_block_size_v":576,"records":[{{"counter_id":{{"handle":1}},"value":2.5}}],"replay_pass":0,"sgpr_count":0,"stream_id":{{"handle":7}},"thread_id":5}}]}},"#, dispatch_info(1)),
        r#""code_objects":[{"agent_id":{"handle":0},"code_object_id":0,"hsa_agent":{"handle":0},"load_base":0,"load_delta":0,"load_size":0,"rocp_agent":{"handle":0},"size":0,"storage_type":0,"uri":""},{"agent_id":{"handle":1},"code_object_id":1,"hsa_agent":{"handle":0},"load_base":0,"load_delta":0,"load_size":64,"memory_base":4096,"memory_size":64,"rocp_agent":{"handle":1},"size":88,"storage_type":2,"uri":"memory://4#offset=0x1000&size=64"}],"#.to_string(),
        r#""counters":[{"agent_id":{"handle":1},"block":"sm","description":"SQ_WAVES described","dimension_ids":[],"dimensions":[],"expression":"sm__warps_launched.sum","id":{"handle":1},"instances":[],"is_constant":0,"is_derived":0,"name":"SQ_WAVES","units":"warp"}],"host_functions":[],"#.to_string(),
        r#""kernel_symbols":[{"accum_vgpr_count":0,"arch_vgpr_count":0,"code_object_id":0,"demangled_kernel_name":"","formatted_kernel_name":"","group_segment_size":0,"kernarg_segment_alignment":0,"kernarg_segment_size":0,"kernel_address":{"handle":0},"kernel_code_entry_byte_offset":0,"kernel_id":0,"kernel_name":"","kernel_object":0,"private_segment_size":0,"sgpr_count":0,"size":88,"truncated_kernel_name":""},"#.to_string(),
        r#"{"accum_vgpr_count":0,"arch_vgpr_count":16,"code_object_id":1,"demangled_kernel_name":"k()","formatted_kernel_name":"k()","group_segment_size":64,"kernarg_segment_alignment":0,"kernarg_segment_size":4,"kernel_address":{"handle":0},"kernel_code_entry_byte_offset":0,"kernel_id":1,"kernel_name":"_Z1kv","kernel_object":1,"private_segment_size":8,"sgpr_count":0,"size":88,"truncated_kernel_name":"k"}],"#.to_string(),
        r#""kreplay":{"replay_costs":[],"warnings":[]},"#.to_string(),
        format!(r#""metadata":{{"cache_control":"all","clock_control":"none","command":["./app","--size","1 MiB"],"config":{{"cache_control":"all","clock_control":"none","counter_collection":true,"counters":["SQ_WAVES"],"kernel_replay":true,"kernel_trace":true}},"fini_time":2000,"hostname":"node-a","init_time":{},"node":{{"domain_name":"","hardware_name":"","hash":0,"hostname":"node-a","id":0,"machine_id":"node-a","release":"","system_name":"","version":""}},"pid":4,"ppid":1}},"#, process(4).start_ns),
        format!(r#""strings":{{"att_filenames":[],{},"code_object_snapshot_filenames":[],"correlation_id":{{"external":[]}},"counters":{{"dimension_ids":[]}},"marker_api":[],"pc_sample_comments":[],"pc_sample_instructions":[]}},"#, expected_kind_tables()),
        r#""summary":[{"domain":"KERNEL_DISPATCH","stats":{"count":2,"max":70,"mean":60.0,"min":50,"operations":[{"key":"k()","value":{"count":2,"max":70,"mean":60.0,"min":50,"sqr":7400,"stddev":14.142135623730951,"sum":120,"variance":200.0}}],"sqr":7400,"stddev":14.142135623730951,"sum":120,"variance":200.0}}]}]}"#.to_string(),
    ]
    .concat();
    assert_eq!(String::from_utf8(streamed).unwrap(), expected);
}

#[test]
fn an_empty_process_has_every_list_of_rocprofv3() {
    let run = RunData {
        processes: vec![ProcessRun::new(process(3))],
    };
    let mut streamed = Vec::new();
    write_document(&run, &mut streamed).unwrap();
    let start_ns = process(3).start_ns;
    let kinds = expected_kind_tables();
    assert_eq!(
        String::from_utf8(streamed).unwrap(),
        format!(
            "{{\"rocprofiler-sdk-tool\":[{{\"agents\":[],\"buffer_records\":{{\"hip_api\":[],\
             \"hsa_api\":[],\"kernel_dispatch\":[],\"marker_api\":[],\"memory_allocation\":[],\
             \"memory_copy\":[],\"pc_sample_host_trap\":[],\"pc_sample_stochastic\":[],\
             \"rccl_api\":[],\"rocdecode_api\":[],\"rocjpeg_api\":[],\"scratch_memory\":[]}},\
             \"callback_records\":{{\"counter_collection\":[]}},\"code_objects\":[{{\
             \"agent_id\":{{\"handle\":0}},\"code_object_id\":0,\"hsa_agent\":{{\"handle\":0}},\
             \"load_base\":0,\"load_delta\":0,\"load_size\":0,\"rocp_agent\":{{\"handle\":0}},\
             \"size\":0,\"storage_type\":0,\"uri\":\"\"}}],\
             \"counters\":[],\"host_functions\":[],\"kernel_symbols\":[{{\
             \"accum_vgpr_count\":0,\"arch_vgpr_count\":0,\"code_object_id\":0,\
             \"demangled_kernel_name\":\"\",\"formatted_kernel_name\":\"\",\
             \"group_segment_size\":0,\"kernarg_segment_alignment\":0,\"kernarg_segment_size\":0,\
             \"kernel_address\":{{\"handle\":0}},\"kernel_code_entry_byte_offset\":0,\"kernel_id\":0,\
             \"kernel_name\":\"\",\"kernel_object\":0,\"private_segment_size\":0,\
             \"sgpr_count\":0,\"size\":88,\"truncated_kernel_name\":\"\"}}],\"kreplay\":{{\
             \"replay_costs\":[],\"warnings\":[]}},\"metadata\":{{\"cache_control\":\"all\",\"clock_control\":\"none\",\"command\":[\"./app\",\
             \"--size\",\"1 MiB\"],\"config\":{{\"cache_control\":\"all\",\
             \"clock_control\":\"none\",\"counter_collection\":false,\"counters\":[],\
             \"kernel_replay\":false,\"kernel_trace\":true}},\"fini_time\":0,\"hostname\":\"node-a\",\
             \"init_time\":{start_ns},\"node\":{{\"domain_name\":\"\",\"hardware_name\":\"\",\
             \"hash\":0,\"hostname\":\"node-a\",\"id\":0,\"machine_id\":\"node-a\",\
             \"release\":\"\",\"system_name\":\"\",\"version\":\"\"}},\"pid\":3,\"ppid\":1}},\"strings\":{{\
             \"att_filenames\":[],{kinds},\"code_object_snapshot_filenames\":[],\
             \"correlation_id\":{{\"external\":[]}},\"counters\":{{\"dimension_ids\":[]}},\
             \"marker_api\":[],\"pc_sample_comments\":[],\"pc_sample_instructions\":[]}},\
             \"summary\":[]}}]}}"
        )
    );
}

#[test]
fn the_streamed_document_is_canonical_json_with_sorted_keys() {
    let run = representative_run();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out_results.json");
    write_json(&run, &path).unwrap();
    let streamed = std::fs::read_to_string(&path).unwrap();
    // serde_json's Value sorts object keys: the same bytes back mean every object of the
    // stream has sorted, unique keys, and nothing but JSON.
    let parsed: Value = serde_json::from_str(&streamed).unwrap();
    assert_eq!(serde_json::to_string(&parsed).unwrap(), streamed);
    assert_eq!(list(&parsed[TOOL_KEY]).len(), 3);
    let read = read_json_counter_records(&path).unwrap();
    assert!(read.last().unwrap().counters["UNDECLARED_0"].is_nan());
    assert_eq!(
        parsed[TOOL_KEY][1]["metadata"]["hostname"],
        "n\"ode\\\n\u{1}é€😀"
    );
}

#[test]
fn kernel_symbols_is_indexed_by_kernel_id() {
    let process = recorded_process();
    let symbols = list(&process["kernel_symbols"]);
    // Kernels 11 and 12: entries 0..=10 are placeholders, as rocprofv3 leaves them.
    assert_eq!(symbols.len(), 13);
    assert_eq!(symbols[11]["kernel_id"], 11);
    assert_eq!(symbols[11]["kernel_name"], "_Z5saxpyPfS_f");
    assert_eq!(symbols[11]["truncated_kernel_name"], "saxpy");
    assert_eq!(symbols[12]["formatted_kernel_name"], "scale(float*)");
    for placeholder in &symbols[..11] {
        assert_eq!(placeholder["kernel_id"], 0);
        assert_eq!(placeholder["kernel_name"], "");
    }
    // rocprofv3's validators: kernel_symbols[dispatch_info.kernel_id].
    for record in list(&process["buffer_records"]["kernel_dispatch"]) {
        let kernel_id = record["dispatch_info"]["kernel_id"].as_u64().unwrap();
        let symbol = &symbols[kernel_id as usize];
        assert_eq!(symbol["kernel_id"], kernel_id);
        let expected = if kernel_id == 11 {
            "saxpy(float*, float*, float)"
        } else {
            "scale(float*)"
        };
        assert_eq!(symbol["formatted_kernel_name"], expected);
    }

    // A dispatch of an undescribed kernel still indexes the list (a placeholder).
    let run = representative_run();
    let odd = &document_of(&run)[TOOL_KEY][1];
    let symbols = list(&odd["kernel_symbols"]);
    assert_eq!(symbols.len(), 100);
    assert_eq!(symbols[99]["kernel_name"], "");
    assert_eq!(
        symbols[11]["formatted_kernel_name"],
        "void f<\"x\">(int, char const*)"
    );
}

#[test]
fn sparse_kernel_ids_are_renumbered_in_every_record() {
    let mut records = recorded_run(8);
    for record in &mut records {
        match record {
            Record::KernelSymbol(k) if k.kernel_id == 11 => k.kernel_id = u64::MAX,
            Record::KernelSymbol(k) => k.kernel_id = 1 << 40,
            Record::Dispatch(d) if d.kernel_id == 11 => d.kernel_id = u64::MAX,
            Record::Dispatch(d) => d.kernel_id = 1 << 40,
            _ => {}
        }
    }
    let run = RunData::from_records(records.clone());
    let process = &document_of(&run)[TOOL_KEY][0];
    let symbols = list(&process["kernel_symbols"]);
    assert_eq!(symbols.len(), 3, "placeholder, then the kernels from 1");
    assert_eq!(symbols[1]["kernel_id"], 1);
    assert_eq!(symbols[1]["kernel_object"], u64::MAX, "our id is kept");
    assert_eq!(symbols[1]["kernel_name"], "_Z5saxpyPfS_f");
    assert_eq!(symbols[2]["kernel_object"], 1u64 << 40);
    for record in list(&process["buffer_records"]["kernel_dispatch"]) {
        let id = record["dispatch_info"]["kernel_id"].as_u64().unwrap();
        let dispatch_id = record["dispatch_info"]["dispatch_id"].as_u64().unwrap();
        assert_eq!(id, if dispatch_id == 1 { 1 } else { 2 });
    }
    let (_dir, _db, json) = json_of(records);
    let read = read_json_counter_records(&json).unwrap();
    assert!(read
        .iter()
        .all(|r| (r.dispatch_id == 1) == (r.kernel_name == "saxpy(float*, float*, float)")));
    assert!(read.iter().any(|r| r.kernel_name == "scale(float*)"));
}

#[test]
fn strings_name_the_integer_codes_of_records() {
    let process = recorded_process();
    let strings = &process["strings"];
    let buffer = list(&strings["buffer_records"]);
    let callback = list(&strings["callback_records"]);
    // rocprofiler-sdk fwd.h: ROCPROFILER_BUFFER_TRACING_LAST = 33, CALLBACK = 22.
    assert_eq!((buffer.len(), callback.len()), (33, 22));
    for (kinds, index, name) in [
        (buffer, 0, "NONE"),
        (buffer, 10, "MEMORY_COPY"),
        (buffer, 11, "KERNEL_DISPATCH"),
        (buffer, 16, "MEMORY_ALLOCATION"),
        (buffer, 18, "ROCDECODE_API"),
        (buffer, 32, "MARKER_CORE_RANGE_API"),
        (callback, 10, "CODE_OBJECT"),
        (callback, 12, "KERNEL_DISPATCH"),
        (callback, 21, "MARKER_CORE_RANGE_API"),
    ] {
        assert_eq!(kinds[index]["kind"], name, "{index}");
    }
    for record in list(&process["buffer_records"]["kernel_dispatch"]) {
        let kind = &buffer[record["kind"].as_u64().unwrap() as usize];
        assert_eq!(kind["kind"], "KERNEL_DISPATCH");
        let operation = record["operation"].as_u64().unwrap() as usize;
        assert_eq!(kind["operations"][operation], "KERNEL_DISPATCH_COMPLETE");
    }
    assert_eq!(
        callback[12]["operations"],
        json!([
            "KERNEL_DISPATCH_NONE",
            "KERNEL_DISPATCH_ENQUEUE",
            "KERNEL_DISPATCH_COMPLETE"
        ])
    );
    assert_eq!(buffer[10]["operations"], json!([]));
    assert_eq!(strings["counters"]["dimension_ids"], json!([]));
    assert_eq!(strings["correlation_id"]["external"], json!([]));
}

#[test]
fn type_kind_and_operation_are_integers() {
    let process = recorded_process();
    assert_eq!(
        process["agents"][0]["type"], 2,
        "ROCPROFILER_AGENT_TYPE_GPU"
    );
    let record = &process["buffer_records"]["kernel_dispatch"][0];
    assert_eq!(
        record["kind"], 11,
        "ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH"
    );
    assert_eq!(
        record["operation"], 2,
        "ROCPROFILER_KERNEL_DISPATCH_COMPLETE"
    );
}

#[test]
fn records_carry_their_stream() {
    let mut records = recorded_run(8);
    if let Record::Dispatch(d) = &mut records[7] {
        d.stream_id = 42;
    }
    let process = &document_of(&RunData::from_records(records))[TOOL_KEY][0];
    let traces = list(&process["buffer_records"]["kernel_dispatch"]);
    let counted = list(&process["callback_records"]["counter_collection"]);
    assert_eq!(traces[0]["stream_id"]["handle"], 42);
    assert_eq!(counted[0]["stream_id"]["handle"], 42);
    assert_eq!(traces[1]["stream_id"]["handle"], 7);
    assert_eq!(counted[1]["stream_id"]["handle"], 7);
    for record in traces {
        assert_eq!(
            record["stream_id"]["handle"],
            record["dispatch_info"]["queue_id"]["handle"]
        );
    }
    for record in counted {
        assert_eq!(
            record["stream_id"]["handle"],
            record["dispatch_data"]["dispatch_info"]["queue_id"]["handle"]
        );
    }
}

#[test]
fn agents_have_distinct_non_zero_handles_that_records_use() {
    let mut run = RunData::from_records(recorded_run(8));
    let process = &mut run.processes[0];
    let mut second = process.agents[0].clone();
    second.agent_id = 1;
    second.pci_location = "0000:2b:00".to_string();
    process.agents.push(second);
    process.dispatches[3].agent_id = 1;
    // Device 5 is only mentioned by a dispatch: it gets an entry too.
    process.dispatches[4].agent_id = 5;
    let process = &document_of(&run)[TOOL_KEY][0];
    let agents = list(&process["agents"]);
    let handles: Vec<u64> = agents
        .iter()
        .map(|a| a["id"]["handle"].as_u64().unwrap())
        .collect();
    assert_eq!(handles, vec![1, 2, 3]);
    let node_ids: Vec<&Value> = agents.iter().map(|a| &a["node_id"]).collect();
    assert_eq!(node_ids, vec![&json!(0), &json!(1), &json!(5)]);
    assert_eq!(agents[2]["product_name"], "");
    let agent_of = |handle: &Value| {
        agents
            .iter()
            .find(|a| &a["id"]["handle"] == handle)
            .unwrap_or_else(|| panic!("no agent {handle}"))["node_id"]
            .as_u64()
            .unwrap()
    };
    let traces = list(&process["buffer_records"]["kernel_dispatch"]);
    let expected_devices = [0, 0, 0, 1, 5];
    for (record, device) in traces.iter().zip(expected_devices) {
        assert_eq!(
            agent_of(&record["dispatch_info"]["agent_id"]["handle"]),
            device
        );
    }
    // Counters: one entry per (agent, counter), distinct handles, each on a listed agent.
    let counters = list(&process["counters"]);
    assert_eq!(counters.len(), 3 * 3);
    let counter_handles: HashSet<u64> = counters
        .iter()
        .map(|c| c["id"]["handle"].as_u64().unwrap())
        .collect();
    assert_eq!(counter_handles.len(), 9);
    assert!(!counter_handles.contains(&0));
    for counter in counters {
        agent_of(&counter["agent_id"]["handle"]);
    }
    // A counter record's handles name a counter of its own agent.
    for record in list(&process["callback_records"]["counter_collection"]) {
        let agent = &record["dispatch_data"]["dispatch_info"]["agent_id"]["handle"];
        for value in list(&record["records"]) {
            let counter = counters
                .iter()
                .find(|c| c["id"]["handle"] == value["counter_id"]["handle"])
                .unwrap();
            assert_eq!(&counter["agent_id"]["handle"], agent);
        }
    }
    // The reader resolves agent 1's counter handles (dispatch 2's record).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.json");
    write_json(&run, &path).unwrap();
    let read = read_json_counter_records(&path).unwrap();
    assert_eq!(read[3].dispatch_id, 2);
    assert_eq!(read[3].counters["SQ_WAVES"], 0.0);
}

#[test]
fn every_record_of_a_kernel_replay_run_has_a_replay_pass() {
    // The trace-only dispatch 3 ran once (pass None): in a kernel-replay run it is pass 0.
    let process = recorded_process();
    let traces = list(&process["buffer_records"]["kernel_dispatch"]);
    let passes: Vec<&Value> = traces.iter().map(|r| &r["replay_pass"]).collect();
    assert_eq!(
        passes,
        vec![&json!(0), &json!(1), &json!(2), &json!(0), &json!(0)]
    );
    // A dispatch of another process of the run that ran once, counters collected: pass 0.
    let mut run = RunData::from_records(recorded_run(8));
    let mut other = RunData::from_records(recorded_run(9)).processes.remove(0);
    for dispatch in &mut other.dispatches {
        dispatch.replay_pass = None;
    }
    run.processes.push(other);
    let document = document_of(&run);
    for process in list(&document[TOOL_KEY]) {
        for record in list(&process["callback_records"]["counter_collection"]) {
            assert!(record["replay_pass"].is_u64(), "{record}");
        }
    }
    let other = &document[TOOL_KEY][1];
    assert_eq!(
        other["callback_records"]["counter_collection"][0]["replay_pass"],
        0
    );
}

#[test]
fn a_run_without_replay_has_no_replay_pass() {
    let records: Vec<Record> = recorded_run(3)
        .into_iter()
        .map(|record| match record {
            Record::Dispatch(mut d) => {
                d.replay_pass = None;
                Record::Dispatch(d)
            }
            other => other,
        })
        .collect();
    let (_dir, _db, json) = json_of(records);
    let read = read_json_counter_records(&json).unwrap();
    assert!(!read.is_empty());
    assert!(read.iter().all(|r| r.replay_pass.is_none()));
    let document: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let traces = list(&document[TOOL_KEY][0]["buffer_records"]["kernel_dispatch"]);
    assert!(traces.iter().all(|r| r.get("replay_pass").is_none()));
}

#[test]
fn the_summary_has_per_kernel_dispatch_statistics() {
    let mut run = RunData::from_records(recorded_run(8));
    let durations = [10, 1_000, 2_000, 20, 30];
    for (dispatch, ns) in run.processes[0].dispatches.iter_mut().zip(durations) {
        dispatch.end_ns = dispatch.start_ns + ns;
    }
    let summary = &document_of(&run)[TOOL_KEY][0]["summary"];
    assert_eq!(list(summary).len(), 1);
    assert_eq!(summary[0]["domain"], "KERNEL_DISPATCH");
    // Passes 1 and 2 of dispatch 1 (1000 and 2000 ns) are replays: not counted.
    let stats = &summary[0]["stats"];
    assert_eq!(stats["count"], 3);
    assert_eq!(stats["sum"], 60);
    assert_eq!(stats["sqr"], 1_400);
    assert_eq!((&stats["min"], &stats["max"]), (&json!(10), &json!(30)));
    assert_eq!(stats["mean"], 20.0);
    assert_eq!(stats["variance"], 100.0);
    assert_eq!(stats["stddev"], 10.0);
    // A std::map as cereal writes it: [{key, value}], keys sorted.
    let operations = list(&stats["operations"]);
    let keys: Vec<&Value> = operations.iter().map(|o| &o["key"]).collect();
    assert_eq!(
        keys,
        vec![
            &json!("saxpy(float*, float*, float)"),
            &json!("scale(float*)")
        ]
    );
    let scale = &operations[1]["value"];
    assert_eq!((&scale["count"], &scale["sum"]), (&json!(2), &json!(50)));
    assert_eq!(scale["variance"], 50.0);
    assert_eq!(operations[0]["value"]["variance"], 0.0);
}

#[test]
fn summary_sums_of_squares_are_exact_past_2_to_the_64() {
    let mut durations = DurationStats::default();
    durations.add(u64::MAX);
    let text = serde_json::to_string(&StatsOfKernel(&durations)).unwrap();
    assert!(
        text.contains(&format!(
            "\"sqr\":{}",
            u128::from(u64::MAX) * u128::from(u64::MAX)
        )),
        "{text}"
    );
    durations.add(u64::MAX);
    assert_eq!(
        durations.sum_of_squares,
        u128::MAX,
        "saturates instead of wrapping"
    );
    assert_eq!(durations.sum, u64::MAX, "saturates");
}

#[test]
fn the_sections_and_lists_are_rocprofv3s() {
    let process = recorded_process();
    let keys =
        |value: &Value| -> Vec<String> { value.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&process),
        [
            "agents",
            "buffer_records",
            "callback_records",
            "code_objects",
            "counters",
            "host_functions",
            "kernel_symbols",
            "kreplay",
            "metadata",
            "strings",
            "summary"
        ]
    );
    // generateJSON.cpp: what buffer_records and callback_records hold.
    assert_eq!(
        keys(&process["buffer_records"]),
        [
            "hip_api",
            "hsa_api",
            "kernel_dispatch",
            "marker_api",
            "memory_allocation",
            "memory_copy",
            "pc_sample_host_trap",
            "pc_sample_stochastic",
            "rccl_api",
            "rocdecode_api",
            "rocjpeg_api",
            "scratch_memory"
        ]
    );
    assert_eq!(keys(&process["callback_records"]), ["counter_collection"]);
    let record = &process["callback_records"]["counter_collection"][0];
    assert_eq!(
        keys(record),
        [
            "accum_vgpr_count",
            "arch_vgpr_count",
            "dispatch_data",
            "lds_block_size_v",
            "records",
            "replay_pass",
            "sgpr_count",
            "stream_id",
            "thread_id"
        ]
    );
}

#[test]
fn a_write_that_fails_midway_names_the_file_and_keeps_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out_results.json");
    let run = RunData::from_records(recorded_run(7));
    write_json(&run, &path).unwrap();
    let before = std::fs::read(&path).unwrap();
    // Larger than the write buffer, so that part of it reaches the temporary file.
    let mut bigger = run.clone();
    bigger.processes[0].warnings.push(Warning {
        message: "x".repeat(64 * 1024),
    });
    let error = write_file(&path, |out| {
        write_document(
            &bigger,
            FullAfter {
                out,
                left: 32 * 1024,
            },
        )
    })
    .unwrap_err()
    .to_string();
    assert!(
        error.starts_with(&format!("cannot write {}: ", path.display())),
        "{error}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(files.len(), 1, "no temporary file is left behind");
}

#[test]
fn a_dispatch_with_three_passes_is_three_records_with_one_dispatch_id() {
    let (_dir, _db, json) = json_of(recorded_run(8));
    let records = read_json_counter_records(&json).unwrap();
    let first: Vec<&JsonCounterRecord> = records.iter().filter(|r| r.dispatch_id == 1).collect();
    assert_eq!(first.len(), 3);
    assert_eq!(
        first.iter().map(|r| r.replay_pass).collect::<Vec<_>>(),
        vec![Some(0), Some(1), Some(2)]
    );
    assert!(first
        .iter()
        .all(|r| r.kernel_name == "saxpy(float*, float*, float)"));
    assert_eq!(first[1].counters["GRBM_GUI_ACTIVE"], 0.5);
    assert_eq!(
        records.len(),
        4,
        "the trace-only dispatch has no counter record"
    );
}

#[test]
fn json_values_agree_with_the_database() {
    let (_dir, db, json) = json_of(recorded_run(8));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut expected: Vec<(u64, Option<u32>, String, f64)> = conn
        .prepare("SELECT dispatch_id, replay_pass, counter_name, value FROM kreplay_pass_counters ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut actual: Vec<(u64, Option<u32>, String, f64)> = read_json_counter_records(&json)
        .unwrap()
        .into_iter()
        .flat_map(|r| {
            r.counters
                .into_iter()
                .map(move |(name, value)| (r.dispatch_id, r.replay_pass, name, value))
        })
        .collect();
    let key = |row: &(u64, Option<u32>, String, f64)| (row.0, row.1, row.2.clone());
    expected.sort_by_key(key);
    actual.sort_by_key(key);
    assert_eq!(actual, expected);
}

#[test]
fn the_layout_follows_rocprofv3_with_our_extension() {
    let (_dir, _db, json) = json_of(recorded_run(8));
    let document: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let process = &document[TOOL_KEY][0];
    assert_eq!(process["metadata"]["pid"], 8);
    assert_eq!(process["agents"][0]["cu_count"], 132);
    assert_eq!(process["counters"].as_array().unwrap().len(), 3);
    let dispatches = process["buffer_records"]["kernel_dispatch"]
        .as_array()
        .unwrap();
    assert_eq!(dispatches.len(), 5, "one per pass, trace-only included");
    let record = &process["callback_records"]["counter_collection"][0];
    assert_eq!(record["replay_pass"], 0);
    assert_eq!(
        record["dispatch_data"]["dispatch_info"]["grid_size"]["x"],
        262_144
    );
    assert_eq!(
        record["dispatch_data"]["dispatch_info"]["workgroup_size"]["x"],
        256
    );
    assert_eq!(record["lds_block_size_v"], 1536);
    let extension = &process["kreplay"];
    assert_eq!(extension["replay_costs"].as_array().unwrap().len(), 2);
    assert_eq!(extension["replay_costs"][0]["outcome"], "replayed");
    assert_eq!(extension["replay_costs"][0]["pass_ns"][2], 12_000);
    assert_eq!(
        extension["warnings"][0]["message"],
        "graph launches are not replayed; they ran once"
    );
}

#[test]
fn reading_a_file_that_is_not_ours_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.json");
    std::fs::write(&path, r#"{"something": []}"#).unwrap();
    let error = read_json_counter_records(&path).unwrap_err().to_string();
    assert!(
        error.contains("other.json") && error.contains(TOOL_KEY),
        "{error}"
    );
}

#[test]
fn reading_skips_placeholders_and_reads_lists_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let record = |kernel_id: u64| {
        json!({
            "dispatch_data": {"dispatch_info": {"dispatch_id": kernel_id, "kernel_id": kernel_id}},
            "records": [{"counter_id": {"handle": 1}, "value": 1.0}],
        })
    };
    let placeholder = json!({"kernel_id": 0, "kernel_name": "", "demangled_kernel_name": ""});
    let symbol = |id: u64, name: &str| json!({"kernel_id": id, "demangled_kernel_name": name});
    let document = json!({ TOOL_KEY: [
        // rocprofv3's layout.
        {
            "counters": [{"id": {"handle": 1}, "name": "SQ_WAVES"}],
            "kernel_symbols": [placeholder, placeholder, symbol(2, "two")],
            "callback_records": {"counter_collection": [record(2), record(1)]},
        },
        // A list without placeholders (kreplay before rocprofv3's layout).
        {
            "counters": [{"id": {"handle": 1}, "name": "SQ_WAVES"}],
            "kernel_symbols": [symbol(7, "seven")],
            "callback_records": {"counter_collection": [record(7)]},
        },
    ]});
    std::fs::write(&path, document.to_string()).unwrap();
    let names: Vec<String> = read_json_counter_records(&path)
        .unwrap()
        .into_iter()
        .map(|r| r.kernel_name)
        .collect();
    assert_eq!(names, ["two", "", "seven"]);
}
