//! A dispatch pass's two records, `buffer_records.kernel_dispatch` and
//! `callback_records.counter_collection`, as typed structs written straight to the document:
//! millions of them are written, and a `serde_json::Value` per record would cost an allocation
//! per key. Their fields are declared in sorted order, the order in which every other object of
//! the document (a `Value`, its keys in a BTreeMap) lists its keys.

use serde::Serialize;

/// `{handle}`, as rocprofiler-sdk writes an id.
#[derive(Serialize)]
pub(super) struct Handle {
    pub(super) handle: u64,
}

/// `{x, y, z}`, as rocprofiler-sdk writes a dim3.
#[derive(Serialize)]
pub(super) struct Xyz {
    x: u64,
    y: u64,
    z: u64,
}

impl From<[u64; 3]> for Xyz {
    fn from([x, y, z]: [u64; 3]) -> Xyz {
        Xyz { x, y, z }
    }
}

/// rocprofiler's correlation id: kreplay's (the launch's), no external id, no ancestor.
#[derive(Serialize)]
pub(super) struct Correlation {
    pub(super) ancestor: u64,
    pub(super) external: u64,
    pub(super) internal: u64,
}

#[derive(Serialize)]
pub(super) struct DispatchInfo {
    pub(super) agent_id: Handle,
    pub(super) dispatch_id: u64,
    pub(super) grid_size: Xyz,
    pub(super) group_segment_size: u64,
    pub(super) kernel_id: u64,
    pub(super) private_segment_size: u64,
    pub(super) queue_id: Handle,
    pub(super) size: u64,
    pub(super) workgroup_size: Xyz,
}

/// A `buffer_records.kernel_dispatch` record.
#[derive(Serialize)]
pub(super) struct KernelDispatch {
    pub(super) correlation_id: Correlation,
    pub(super) dispatch_info: DispatchInfo,
    pub(super) end_timestamp: u64,
    pub(super) kind: usize,
    pub(super) operation: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) replay_pass: Option<u32>,
    pub(super) size: u64,
    pub(super) start_timestamp: u64,
    pub(super) stream_id: Handle,
    pub(super) thread_id: u64,
}

#[derive(Serialize)]
pub(super) struct DispatchData {
    pub(super) correlation_id: Correlation,
    pub(super) dispatch_info: DispatchInfo,
    pub(super) end_timestamp: u64,
    pub(super) size: u64,
    pub(super) start_timestamp: u64,
}

/// One counter's value in a counter record (a non-finite value is written `null`, as a
/// `Value` holding it is).
#[derive(Serialize)]
pub(super) struct CounterValue {
    pub(super) counter_id: Handle,
    pub(super) value: f64,
}

/// A `callback_records.counter_collection` record.
#[derive(Serialize)]
pub(super) struct CounterRecord {
    pub(super) accum_vgpr_count: u64,
    pub(super) arch_vgpr_count: u64,
    pub(super) dispatch_data: DispatchData,
    pub(super) lds_block_size_v: u64,
    pub(super) records: Vec<CounterValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) replay_pass: Option<u32>,
    pub(super) sgpr_count: u64,
    pub(super) stream_id: Handle,
    pub(super) thread_id: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_record_writes_its_keys_as_a_value_would() {
        let record = CounterValue {
            counter_id: Handle { handle: 3 },
            value: f64::NAN,
        };
        let typed = serde_json::to_string(&record).unwrap();
        let value = serde_json::to_value(&record).unwrap();
        assert_eq!(typed, value.to_string());
        assert_eq!(typed, r#"{"counter_id":{"handle":3},"value":null}"#);
    }
}
