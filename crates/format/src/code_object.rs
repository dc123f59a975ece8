//! A code object: a module (cubin, fat binary, PTX) the process loaded onto a device,
//! rocprofv3's "code object" (rocprofiler-sdk's `rocprofiler_callback_tracing_code_object_load_data_t`).
//! Kernel symbols name the one they come from by [`CodeObject::code_object_id`].

use serde::{Deserialize, Serialize};

/// A module loaded onto a device, recorded once per process and device when it is loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeObject {
    /// Numbered from 1 per process; 0 is "no code object" (a kernel symbol whose module is
    /// unknown says 0).
    pub code_object_id: u64,
    /// The device it was loaded onto (as [`crate::AgentInfo::agent_id`]).
    pub agent_id: u64,
    /// Where it was loaded from, as rocprofv3 writes it: for an image in memory (every CUDA
    /// module: the driver is handed bytes) [`memory_uri`]'s
    /// `memory://<pid>#offset=0x<address>&size=<bytes>`.
    pub uri: String,
    /// The image's host address (on a GPU, where CUPTI's module-loaded callback hands it over)
    /// and its size, bytes.
    pub memory_base: u64,
    pub memory_size: u64,
    /// Where the code sits in device memory and how large it is there; CUDA does not say:
    /// `load_base` 0 and `load_size` the image's size.
    pub load_base: u64,
    pub load_size: u64,
}

impl CodeObject {
    /// A code object loaded from an image in memory: `size` bytes at `address` of process `pid`.
    pub fn from_memory(
        code_object_id: u64,
        agent_id: u64,
        pid: u32,
        address: u64,
        size: u64,
    ) -> CodeObject {
        CodeObject {
            code_object_id,
            agent_id,
            uri: memory_uri(pid, address, size),
            memory_base: address,
            memory_size: size,
            load_base: 0,
            load_size: size,
        }
    }
}

/// The URI of a code object loaded from memory, as the HSA runtime (and so rocprofv3) writes it:
/// `memory://<pid>#offset=0x<address, hex>&size=<bytes, decimal>`.
pub fn memory_uri(pid: u32, address: u64, size: u64) -> String {
    format!("memory://{pid}#offset={address:#x}&size={size}")
}

/// rocprofiler-sdk's storage types (`rocprofiler_code_object_storage_type_t`): what a JSON
/// `code_objects` entry's `storage_type` holds, and rocpd's `storage_type` column's name.
pub(crate) const STORAGE_TYPE_MEMORY: u64 = 2;
pub(crate) const STORAGE_TYPE_MEMORY_NAME: &str = "MEMORY";

/// `sizeof(rocprofiler_callback_tracing_code_object_load_data_t)` on x86-64 (eight 8-byte
/// fields, the 4-byte storage type padded to 8, a 16-byte union): the `size` rocprofv3 writes.
pub(crate) const SIZE_CODE_OBJECT: u64 = 88;

/// A code object as rocprofiler-sdk serialises its load record (the JSON `code_objects` entry
/// and rocpd's `extdata`), `agent_handle` being how the document names its agent. Both names
/// of the agent field are written: rocprofiler-sdk renamed `rocp_agent` (with `hsa_agent`
/// beside it) to `agent_id`, and readers of either version find theirs.
pub(crate) fn load_record_json(code_object: &CodeObject, agent_handle: u64) -> serde_json::Value {
    serde_json::json!({
        "size": SIZE_CODE_OBJECT,
        "code_object_id": code_object.code_object_id,
        "agent_id": { "handle": agent_handle },
        "rocp_agent": { "handle": agent_handle },
        "hsa_agent": { "handle": 0 },
        "uri": code_object.uri,
        "load_base": code_object.load_base,
        "load_size": code_object.load_size,
        "load_delta": 0,
        "storage_type": STORAGE_TYPE_MEMORY,
        "memory_base": code_object.memory_base,
        "memory_size": code_object.memory_size,
    })
}

/// rocprofv3's placeholder entry (a default-constructed load record: zeros, empty uri, storage
/// type NONE) for the slots of `code_objects` no code object has.
pub(crate) fn placeholder_json() -> serde_json::Value {
    serde_json::json!({
        "size": 0,
        "code_object_id": 0,
        "agent_id": { "handle": 0 },
        "rocp_agent": { "handle": 0 },
        "hsa_agent": { "handle": 0 },
        "uri": "",
        "load_base": 0,
        "load_size": 0,
        "load_delta": 0,
        "storage_type": 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_uris_are_written_as_the_hsa_runtime_writes_them() {
        assert_eq!(
            memory_uri(4242, 0x7f12_3400_0000, 9216),
            "memory://4242#offset=0x7f1234000000&size=9216"
        );
        let object = CodeObject::from_memory(3, 1, 7, 0x1000, 64);
        assert_eq!(object.uri, "memory://7#offset=0x1000&size=64");
        assert_eq!((object.memory_base, object.memory_size), (0x1000, 64));
        assert_eq!((object.load_base, object.load_size), (0, 64));
    }

    #[test]
    fn load_records_carry_rocprofiler_sdk_fields() {
        let object = CodeObject::from_memory(3, 1, 7, 0x1000, 64);
        let entry = load_record_json(&object, 2);
        assert_eq!(entry["size"], 88);
        assert_eq!(entry["code_object_id"], 3);
        assert_eq!(entry["agent_id"]["handle"], 2);
        assert_eq!(entry["rocp_agent"]["handle"], 2);
        assert_eq!(entry["storage_type"], 2);
        assert_eq!(entry["memory_size"], 64);
        assert_eq!(entry["uri"], "memory://7#offset=0x1000&size=64");
        let placeholder = placeholder_json();
        assert_eq!(placeholder["storage_type"], 0);
        assert!(placeholder.get("memory_base").is_none());
    }
}
