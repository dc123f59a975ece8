//! A dispatch pass's two records, `buffer_records.kernel_dispatch` and
//! `callback_records.counter_collection`, and a dispatch's `kreplay.replay_costs` entry, as typed
//! structs written straight to the document:
//! millions of them are written, and a `serde_json::Value` per record would cost an allocation
//! per key. Their fields are declared in sorted order, the order in which every other object of
//! the document (a `Value`, its keys in a BTreeMap) lists its keys.

use crate::records::{CacheState, ReplayCost, ReplayOutcome, Staging};
use serde::Serialize;

/// `{handle}`, as rocprofiler-sdk writes an id.
#[derive(Serialize, Clone, Copy, Default)]
pub(super) struct Handle {
    pub(super) handle: u64,
}

/// `{x, y, z}`, as rocprofiler-sdk writes a dim3.
#[derive(Serialize, Clone, Copy, Default)]
pub(super) struct Xyz {
    pub(super) x: u64,
    pub(super) y: u64,
    pub(super) z: u64,
}

impl From<[u64; 3]> for Xyz {
    fn from([x, y, z]: [u64; 3]) -> Xyz {
        Xyz { x, y, z }
    }
}

/// rocprofiler's correlation id: kreplay's (the launch's), no external id, no ancestor.
#[derive(Serialize, Clone, Copy, Default)]
pub(super) struct Correlation {
    pub(super) ancestor: u64,
    pub(super) external: u64,
    pub(super) internal: u64,
}

#[derive(Serialize, Clone, Copy, Default)]
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

/// A `dispatch_info`'s fields after `dispatch_id`, what the kernel's launch decides: grid, group
/// segment, kernel, private segment, queue, size, workgroup. Most passes share theirs with many
/// others: the writer formats each once ([`super::raw`]), the spool numbers them
/// ([`super::spool`]).
pub(super) type Launch = [u64; 11];

impl DispatchInfo {
    pub(super) fn launch(&self) -> Launch {
        let (grid, workgroup) = (&self.grid_size, &self.workgroup_size);
        [
            grid.x,
            grid.y,
            grid.z,
            self.group_segment_size,
            self.kernel_id,
            self.private_segment_size,
            self.queue_id.handle,
            self.size,
            workgroup.x,
            workgroup.y,
            workgroup.z,
        ]
    }

    /// Sets the fields [`DispatchInfo::launch`] gives.
    pub(super) fn set_launch(&mut self, launch: &Launch) {
        let [gx, gy, gz, group, kernel, private, queue, size, wx, wy, wz] = *launch;
        self.grid_size = [gx, gy, gz].into();
        self.group_segment_size = group;
        self.kernel_id = kernel;
        self.private_segment_size = private;
        self.queue_id.handle = queue;
        self.size = size;
        self.workgroup_size = [wx, wy, wz].into();
    }
}

/// A `buffer_records.kernel_dispatch` record.
#[derive(Serialize)]
pub(super) struct KernelDispatch {
    pub(super) correlation_id: Correlation,
    pub(super) dispatch_info: DispatchInfo,
    pub(super) end_timestamp: u64,
    /// kreplay's, under `--kernel-rename`: the name the dispatch is given (its innermost
    /// range); left out for a dispatch launched outside any range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) kernel_rename: Option<String>,
    pub(super) kind: usize,
    pub(super) operation: usize,
    /// kreplay's, with `--marker-trace`: the push/pop ranges open on the launching thread at
    /// launch, outermost first (the database's `ranges`); left out when none was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) ranges: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) replay_pass: Option<u32>,
    pub(super) size: u64,
    pub(super) start_timestamp: u64,
    pub(super) stream_id: Handle,
    pub(super) thread_id: u64,
}

#[derive(Serialize, Default)]
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
#[derive(Serialize, Default)]
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

/// A `kreplay.replay_costs` entry: the record's fields, sorted.
#[derive(Serialize)]
pub(super) struct SortedCost<'a> {
    pub(super) agent_id: u64,
    pub(super) bytes_restored: u64,
    pub(super) bytes_snapshotted: u64,
    pub(super) bytes_tracked: u64,
    pub(super) cache: CacheState,
    pub(super) dispatch_id: u64,
    pub(super) drain_ns: u64,
    pub(super) memory_clock_mhz: [u32; 2],
    pub(super) outcome: ReplayOutcome,
    pub(super) pass_ns: &'a [u64],
    pub(super) passes: u32,
    pub(super) restore_ns: u64,
    pub(super) sm_clock_mhz: [u32; 2],
    pub(super) snapshot_ns: u64,
    pub(super) staging: Staging,
    pub(super) timing_execution_ns: u64,
}

impl<'a> From<&'a ReplayCost> for SortedCost<'a> {
    fn from(c: &'a ReplayCost) -> SortedCost<'a> {
        SortedCost {
            agent_id: c.agent_id,
            bytes_restored: c.bytes_restored,
            bytes_snapshotted: c.bytes_snapshotted,
            bytes_tracked: c.bytes_tracked,
            cache: c.cache,
            dispatch_id: c.dispatch_id,
            drain_ns: c.drain_ns,
            memory_clock_mhz: c.memory_clock_mhz,
            outcome: c.outcome,
            pass_ns: &c.pass_ns,
            passes: c.passes,
            restore_ns: c.restore_ns,
            sm_clock_mhz: c.sm_clock_mhz,
            snapshot_ns: c.snapshot_ns,
            staging: c.staging,
            timing_execution_ns: c.timing_execution_ns,
        }
    }
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

    #[test]
    fn a_sorted_cost_is_the_cost_as_a_value() {
        for record in crate::testdata::recorded_run(42) {
            if let crate::records::Record::ReplayCost(cost) = record {
                let typed = serde_json::to_string(&SortedCost::from(&cost)).unwrap();
                assert_eq!(typed, serde_json::to_value(&cost).unwrap().to_string());
            }
        }
    }
}
