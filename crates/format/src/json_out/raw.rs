//! The records the document holds millions of (`kernel_dispatch`, `counter_collection`,
//! `replay_costs`) written by hand into a line buffer: their keys as literal bytes, integers by
//! `itoa`, strings and floats as serde_json writes them. serde_json escaped every key of every
//! record and wrote it a few bytes at a time, most of the document's time. The bytes are
//! serde_json's compact ones for the same typed record (`tests` compares them).

use super::dispatch_json::{
    Correlation, CounterRecord, DispatchData, DispatchInfo, Handle, KernelDispatch, Launch,
    SortedCost, Xyz,
};
use rustc_hash::FxHashMap;
use std::io;

/// A record's bytes, built before they are written.
pub(super) struct JsonBytes {
    pub(super) bytes: Vec<u8>,
    digits: itoa::Buffer,
    /// The end of a `dispatch_info` object, after its `dispatch_id` (`grid_size` to
    /// `workgroup_size`, what its launch decides), by launch: the same for every pass of a
    /// kernel launched the same way, written once (issue 49).
    launches: FxHashMap<Launch, Vec<u8>>,
}

/// How many launches' `dispatch_info` ends are kept (all are forgotten when more come).
const LAUNCHES: usize = 4096;

impl Default for JsonBytes {
    fn default() -> JsonBytes {
        JsonBytes::with_capacity(1024)
    }
}

impl JsonBytes {
    pub(super) fn with_capacity(capacity: usize) -> JsonBytes {
        JsonBytes {
            bytes: Vec::with_capacity(capacity),
            digits: itoa::Buffer::new(),
            launches: FxHashMap::default(),
        }
    }

    #[inline(always)]
    fn raw(&mut self, text: &str) -> &mut Self {
        self.bytes.extend_from_slice(text.as_bytes());
        self
    }

    /// An integer: below 100 (most of a record's: handles, kinds, register counts, passes)
    /// as one or two bytes pushed, else by `itoa` (its digits copied by `memcpy`, a call).
    fn int(&mut self, value: impl Into<u64>) -> &mut Self {
        match value.into() {
            value @ 0..10 => self.bytes.push(b'0' + value as u8),
            value @ 10..100 => self
                .bytes
                .extend_from_slice(&[b'0' + (value / 10) as u8, b'0' + (value % 10) as u8]),
            value => self
                .bytes
                .extend_from_slice(self.digits.format(value).as_bytes()),
        }
        self
    }

    /// A string that needs no escaping (an enum's serde name, `as_str`), quoted.
    fn name(&mut self, name: &str) -> &mut Self {
        self.raw("\"").raw(name).raw("\"")
    }

    /// Anything else (strings, floats, lists of them) as serde_json writes it.
    fn value(&mut self, value: &impl serde::Serialize) -> io::Result<&mut Self> {
        serde_json::to_writer(&mut self.bytes, value)?;
        Ok(self)
    }

    fn handle(&mut self, handle: &Handle) -> &mut Self {
        self.raw("{\"handle\":").int(handle.handle).raw("}")
    }

    fn xyz(&mut self, xyz: &Xyz) -> &mut Self {
        self.raw("{\"x\":")
            .int(xyz.x)
            .raw(",\"y\":")
            .int(xyz.y)
            .raw(",\"z\":")
            .int(xyz.z)
            .raw("}")
    }

    fn correlation(&mut self, c: &Correlation) -> &mut Self {
        if (c.ancestor, c.external) == (0, 0) {
            // kreplay's: no ancestor, no external id.
            return self
                .raw("{\"ancestor\":0,\"external\":0,\"internal\":")
                .int(c.internal)
                .raw("}");
        }
        self.raw("{\"ancestor\":")
            .int(c.ancestor)
            .raw(",\"external\":")
            .int(c.external)
            .raw(",\"internal\":")
            .int(c.internal)
            .raw("}")
    }

    fn dispatch_info(&mut self, info: &DispatchInfo) -> &mut Self {
        self.raw("{\"agent_id\":")
            .handle(&info.agent_id)
            .raw(",\"dispatch_id\":")
            .int(info.dispatch_id);
        let launch = info.launch();
        match self.launches.get(&launch) {
            Some(end) => self.bytes.extend_from_slice(end),
            None => {
                let at = self.bytes.len();
                self.raw(",\"grid_size\":")
                    .xyz(&info.grid_size)
                    .raw(",\"group_segment_size\":")
                    .int(info.group_segment_size)
                    .raw(",\"kernel_id\":")
                    .int(info.kernel_id)
                    .raw(",\"private_segment_size\":")
                    .int(info.private_segment_size)
                    .raw(",\"queue_id\":")
                    .handle(&info.queue_id)
                    .raw(",\"size\":")
                    .int(info.size)
                    .raw(",\"workgroup_size\":")
                    .xyz(&info.workgroup_size)
                    .raw("}");
                if self.launches.len() >= LAUNCHES {
                    self.launches.clear();
                }
                self.launches.insert(launch, self.bytes[at..].to_vec());
            }
        }
        self
    }

    fn replay_pass(&mut self, pass: Option<u32>) -> &mut Self {
        match pass {
            Some(pass) => self.raw(",\"replay_pass\":").int(pass),
            None => self,
        }
    }

    /// A `buffer_records.kernel_dispatch` record.
    pub(super) fn kernel_dispatch(&mut self, r: &KernelDispatch) -> io::Result<()> {
        self.raw("{\"correlation_id\":")
            .correlation(&r.correlation_id)
            .raw(",\"dispatch_info\":")
            .dispatch_info(&r.dispatch_info)
            .raw(",\"end_timestamp\":")
            .int(r.end_timestamp);
        if let Some(name) = &r.kernel_rename {
            self.raw(",\"kernel_rename\":").value(name)?;
        }
        self.raw(",\"kind\":")
            .int(r.kind as u64)
            .raw(",\"operation\":")
            .int(r.operation as u64);
        if !r.ranges.is_empty() {
            self.raw(",\"ranges\":").value(&r.ranges)?;
        }
        self.replay_pass(r.replay_pass)
            .raw(",\"size\":")
            .int(r.size)
            .raw(",\"start_timestamp\":")
            .int(r.start_timestamp)
            .raw(",\"stream_id\":")
            .handle(&r.stream_id)
            .raw(",\"thread_id\":")
            .int(r.thread_id)
            .raw("}");
        Ok(())
    }

    fn dispatch_data(&mut self, d: &DispatchData) -> &mut Self {
        self.raw("{\"correlation_id\":")
            .correlation(&d.correlation_id)
            .raw(",\"dispatch_info\":")
            .dispatch_info(&d.dispatch_info)
            .raw(",\"end_timestamp\":")
            .int(d.end_timestamp)
            .raw(",\"size\":")
            .int(d.size)
            .raw(",\"start_timestamp\":")
            .int(d.start_timestamp)
            .raw("}")
    }

    /// A `callback_records.counter_collection` record.
    pub(super) fn counter_record(&mut self, r: &CounterRecord) -> io::Result<()> {
        self.raw("{\"accum_vgpr_count\":")
            .int(r.accum_vgpr_count)
            .raw(",\"arch_vgpr_count\":")
            .int(r.arch_vgpr_count)
            .raw(",\"dispatch_data\":")
            .dispatch_data(&r.dispatch_data)
            .raw(",\"lds_block_size_v\":")
            .int(r.lds_block_size_v)
            .raw(",\"records\":[");
        for (index, value) in r.records.iter().enumerate() {
            if index > 0 {
                self.raw(",");
            }
            self.raw("{\"counter_id\":")
                .handle(&value.counter_id)
                .raw(",\"value\":")
                .value(&value.value)?
                .raw("}");
        }
        self.raw("]")
            .replay_pass(r.replay_pass)
            .raw(",\"sgpr_count\":")
            .int(r.sgpr_count)
            .raw(",\"stream_id\":")
            .handle(&r.stream_id)
            .raw(",\"thread_id\":")
            .int(r.thread_id)
            .raw("}");
        Ok(())
    }

    /// A `kreplay.replay_costs` entry.
    pub(super) fn cost(&mut self, c: &SortedCost) -> io::Result<()> {
        self.raw("{\"agent_id\":")
            .int(c.agent_id)
            .raw(",\"bytes_restored\":")
            .int(c.bytes_restored)
            .raw(",\"bytes_snapshotted\":")
            .int(c.bytes_snapshotted)
            .raw(",\"bytes_tracked\":")
            .int(c.bytes_tracked)
            .raw(",\"cache\":")
            .name(c.cache.as_str())
            .raw(",\"dispatch_id\":")
            .int(c.dispatch_id)
            .raw(",\"drain_ns\":")
            .int(c.drain_ns)
            .raw(",\"memory_clock_mhz\":[")
            .int(c.memory_clock_mhz[0])
            .raw(",")
            .int(c.memory_clock_mhz[1])
            .raw("],\"outcome\":")
            .name(c.outcome.as_str())
            .raw(",\"pass_ns\":[");
        for (index, ns) in c.pass_ns.iter().enumerate() {
            if index > 0 {
                self.raw(",");
            }
            self.int(*ns);
        }
        self.raw("],\"passes\":")
            .int(c.passes)
            .raw(",\"restore_ns\":")
            .int(c.restore_ns)
            .raw(",\"sm_clock_mhz\":[")
            .int(c.sm_clock_mhz[0])
            .raw(",")
            .int(c.sm_clock_mhz[1])
            .raw("],\"snapshot_ns\":")
            .int(c.snapshot_ns)
            .raw(",\"staging\":")
            .name(c.staging.as_str())
            .raw(",\"timing_execution_ns\":")
            .int(c.timing_execution_ns)
            .raw("}");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::dispatch_json::CounterValue;
    use super::*;
    use crate::records::Record;

    fn info(seed: u64) -> DispatchInfo {
        DispatchInfo {
            agent_id: Handle { handle: seed % 3 },
            dispatch_id: seed,
            grid_size: [seed % 12, 1, u64::MAX].into(),
            group_segment_size: seed * 7,
            kernel_id: seed % 5,
            private_segment_size: 0,
            queue_id: Handle { handle: seed + 1 },
            size: 128,
            workgroup_size: [256, 2, 1].into(),
        }
    }

    fn correlation(seed: u64) -> Correlation {
        Correlation {
            ancestor: 0,
            external: seed,
            internal: seed * 3,
        }
    }

    /// Integers on either side of each way of writing them.
    #[test]
    fn integers_are_their_decimal_digits() {
        let mut line = JsonBytes::default();
        for value in [0, 1, 9, 10, 11, 42, 99, 100, 101, 999, 1 << 32, u64::MAX] {
            line.bytes.clear();
            line.int(value);
            assert_eq!(line.bytes, value.to_string().as_bytes(), "{value}");
        }
    }

    #[test]
    fn records_written_by_hand_are_serde_jsons_bytes() {
        let names = [
            None,
            Some("plain".to_string()),
            Some("a\"b\\c\n\u{7}é".into()),
        ];
        let ranges = [vec![], vec!["outer".to_string(), "dom@in\"ner".into()]];
        let values = [
            0.0,
            -0.0,
            0.5,
            1.0,
            262_144.0,
            1e300,
            1.5e-12,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            f64::MAX,
            1e15,
            1e16,
            -123_456_789.125,
            5e-324,
        ];
        let mut line = JsonBytes::default();
        // Each launch (`info`) twice at least: its `dispatch_info` end written, then reused.
        for seed in (0..24u64).chain(0..24).chain(24..30) {
            let record = KernelDispatch {
                correlation_id: correlation(seed),
                dispatch_info: info(seed),
                end_timestamp: seed * 1000 + 17,
                kernel_rename: names[seed as usize % 3].clone(),
                kind: 11,
                operation: 2,
                ranges: ranges[seed as usize % 2].clone(),
                replay_pass: (seed % 4 != 0).then_some(seed as u32 % 3),
                size: 192,
                start_timestamp: seed * 1000,
                stream_id: Handle { handle: seed + 1 },
                thread_id: 4242,
            };
            line.bytes.clear();
            line.kernel_dispatch(&record).unwrap();
            assert_eq!(line.bytes, serde_json::to_vec(&record).unwrap());
            let counters = CounterRecord {
                accum_vgpr_count: 0,
                arch_vgpr_count: seed,
                dispatch_data: DispatchData {
                    correlation_id: correlation(seed),
                    dispatch_info: info(seed),
                    end_timestamp: 9,
                    size: 176,
                    start_timestamp: 3,
                },
                lds_block_size_v: seed * 2,
                records: (0..seed as usize % 3)
                    .map(|i| CounterValue {
                        counter_id: Handle { handle: i as u64 },
                        value: values[(seed as usize + i) % values.len()],
                    })
                    .collect(),
                replay_pass: (seed % 3 != 0).then_some(1),
                sgpr_count: 0,
                stream_id: Handle { handle: 7 },
                thread_id: seed,
            };
            line.bytes.clear();
            line.counter_record(&counters).unwrap();
            assert_eq!(line.bytes, serde_json::to_vec(&counters).unwrap());
        }
        for record in crate::testdata::recorded_run(7) {
            if let Record::ReplayCost(cost) = record {
                let sorted = SortedCost::from(&cost);
                line.bytes.clear();
                line.cost(&sorted).unwrap();
                assert_eq!(line.bytes, serde_json::to_vec(&sorted).unwrap());
            }
        }
    }
}
