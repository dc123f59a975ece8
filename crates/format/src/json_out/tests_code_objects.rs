//! `code_objects`: indexed by code object id as rocprofv3 indexes it, each entry's agent one of
//! `agents`, and every kernel symbol's `code_object_id` naming an entry.

use super::document::write_document;
use super::kinds::TOOL_KEY;
use crate::records::*;
use crate::run::RunData;
use crate::testdata::*;
use serde_json::Value;

fn process_of(run: &RunData) -> Value {
    let mut bytes = Vec::new();
    write_document(run, &mut bytes).unwrap();
    let document: Value = serde_json::from_slice(&bytes).unwrap();
    document[TOOL_KEY][0].clone()
}

fn entries(value: &Value) -> &Vec<Value> {
    value.as_array().unwrap()
}

/// Every kernel symbol's `code_object_id` is the index of a described entry of `code_objects`
/// whose `code_object_id` it is, and whose agent is one of `agents`.
fn assert_linked(process: &Value) {
    let objects = entries(&process["code_objects"]);
    let agents: Vec<&Value> = entries(&process["agents"])
        .iter()
        .map(|a| &a["id"]["handle"])
        .collect();
    let symbols = entries(&process["kernel_symbols"]);
    let described = symbols.iter().filter(|s| s["kernel_id"] != 0);
    assert!(described.clone().count() > 0);
    for symbol in described {
        let id = symbol["code_object_id"].as_u64().unwrap() as usize;
        let object = &objects[id];
        assert_eq!(object["code_object_id"].as_u64(), Some(id as u64));
        assert_eq!(object["size"], 88, "{symbol}");
        assert!(agents.contains(&&object["agent_id"]["handle"]));
    }
}

#[test]
fn code_objects_are_indexed_by_id_and_kernels_name_theirs() {
    let process = process_of(&RunData::from_records(recorded_run(8)));
    let objects = entries(&process["code_objects"]);
    assert_eq!(objects.len(), 3);
    assert_eq!(objects[0]["size"], 0, "slot 0 is rocprofv3's placeholder");
    assert_eq!(
        objects[1]["uri"],
        "memory://8#offset=0x7f0000001000&size=9216"
    );
    assert_eq!(objects[1]["storage_type"], 2);
    assert_eq!(objects[1]["memory_base"], 0x7f00_0000_1000u64);
    assert_eq!(objects[2]["memory_size"], 512);
    assert_eq!(process["kernel_symbols"][11]["code_object_id"], 1);
    assert_eq!(process["kernel_symbols"][12]["code_object_id"], 2);
    assert_linked(&process);
}

#[test]
fn a_code_object_on_an_agent_nothing_else_names_gets_an_agent_entry() {
    let mut run = RunData::from_records(recorded_run(8));
    run.processes[0]
        .code_objects
        .push(CodeObject::from_memory(3, 5, 8, 0x2000, 16));
    let process = process_of(&run);
    let agents = entries(&process["agents"]);
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[1]["node_id"], 5);
    assert_eq!(
        process["code_objects"][3]["agent_id"]["handle"],
        agents[1]["id"]["handle"]
    );
}

#[test]
fn sparse_code_object_ids_are_renumbered_in_every_reference() {
    let mut run = RunData::from_records(recorded_run(8));
    let process = &mut run.processes[0];
    for object in &mut process.code_objects {
        object.code_object_id <<= 40;
    }
    for kernel in &mut process.kernels {
        kernel.code_object_id <<= 40;
    }
    let document = process_of(&run);
    let objects = entries(&document["code_objects"]);
    assert_eq!(objects.len(), 3);
    assert_eq!(objects[1]["memory_size"], 9216);
    assert_eq!(objects[2]["memory_size"], 512);
    assert_linked(&document);
}
