//! Reading the counter records of a JSON file back (kreplay's or rocprofv3's): what tests of
//! other crates compare.

use super::kinds::TOOL_KEY;
use crate::error::FormatError;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// One counter record of a JSON file, resolved: what tests of other crates compare.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonCounterRecord {
    pub dispatch_id: u64,
    /// `replay_pass` of the record: on every record of a kernel-replay run (0 for a dispatch
    /// that ran once), `None` in a run without kernel replay.
    pub replay_pass: Option<u32>,
    /// The demangled kernel name (from `kernel_symbols`).
    pub kernel_name: String,
    /// Counter name (through `counters[].id.handle`) → value, instances summed.
    pub counters: BTreeMap<String, f64>,
}

/// Reads every `callback_records.counter_collection` record of a JSON file written by kreplay
/// (or by rocprofv3), all processes in file order.
pub fn read_json_counter_records(
    path: impl AsRef<Path>,
) -> Result<Vec<JsonCounterRecord>, FormatError> {
    let path = path.as_ref();
    let bad = |detail: String| FormatError::Json {
        path: path.to_path_buf(),
        detail,
    };
    let text = std::fs::read_to_string(path).map_err(|e| FormatError::io(path, e))?;
    let document: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let processes = document
        .get(TOOL_KEY)
        .and_then(Value::as_array)
        .ok_or_else(|| bad(format!("no \"{TOOL_KEY}\" list at the top level")))?;
    let mut out = Vec::new();
    for process in processes {
        let mut counter_names: HashMap<u64, String> = HashMap::new();
        for counter in process["counters"].as_array().into_iter().flatten() {
            if let (Some(handle), Some(name)) =
                (counter["id"]["handle"].as_u64(), counter["name"].as_str())
            {
                counter_names.insert(handle, name.to_string());
            }
        }
        // Entry i is kernel i (rocprofv3's layout); placeholders (kernel_id 0 past entry 0)
        // name nothing. Looked up by `kernel_id`, which also reads lists without placeholders.
        let mut kernel_names: HashMap<u64, String> = HashMap::new();
        let symbols = process["kernel_symbols"].as_array().into_iter().flatten();
        for (index, symbol) in symbols.enumerate() {
            match symbol["kernel_id"].as_u64() {
                Some(0) if index != 0 => {}
                Some(id) => {
                    let name = symbol["demangled_kernel_name"]
                        .as_str()
                        .or_else(|| symbol["kernel_name"].as_str())
                        .unwrap_or_default();
                    kernel_names.entry(id).or_insert_with(|| name.to_string());
                }
                None => {}
            }
        }
        let records = process["callback_records"]["counter_collection"]
            .as_array()
            .into_iter()
            .flatten();
        for record in records {
            let info = &record["dispatch_data"]["dispatch_info"];
            let dispatch_id = info["dispatch_id"].as_u64().ok_or_else(|| {
                bad("a counter record has no dispatch_data.dispatch_info.dispatch_id".into())
            })?;
            let kernel_id = info["kernel_id"].as_u64().unwrap_or(0);
            let mut counters = BTreeMap::new();
            for entry in record["records"].as_array().into_iter().flatten() {
                let handle = entry["counter_id"]["handle"].as_u64().ok_or_else(|| {
                    bad(format!(
                        "a record of dispatch {dispatch_id} has no counter_id.handle"
                    ))
                })?;
                let name = counter_names
                    .get(&handle)
                    .ok_or_else(|| bad(format!("counter handle {handle} is not in counters[]")))?;
                *counters.entry(name.clone()).or_insert(0.0) +=
                    entry["value"].as_f64().unwrap_or(f64::NAN); // JSON writes NaN as null
            }
            out.push(JsonCounterRecord {
                dispatch_id,
                replay_pass: record["replay_pass"].as_u64().map(|p| p as u32),
                kernel_name: kernel_names.get(&kernel_id).cloned().unwrap_or_default(),
                counters,
            });
        }
    }
    Ok(out)
}
