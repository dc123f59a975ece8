//! A dispatch pass and what the trace shows of its replay cost, as bytes for the reorder window and
//! the external sort ([`crate::spill`]) that bring the records of one dispatch together:
//! fixed-width little-endian fields; counter names as indexes into the process's list of names (a
//! pass's NVTX ranges are not kept: the trace does not show them).

use crate::records::{CacheState, DispatchRecord, ReplayCost};
use rustc_hash::FxHashMap;
use std::io;

/// What a slice shows of its dispatch's replay cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct CostFacts {
    pub(super) cache: CacheState,
    pub(super) sm_clock_mhz: [u32; 2],
    pub(super) memory_clock_mhz: [u32; 2],
}

impl CostFacts {
    pub(super) fn of(cost: &ReplayCost) -> CostFacts {
        CostFacts {
            cache: cost.cache,
            sm_clock_mhz: cost.sm_clock_mhz,
            memory_clock_mhz: cost.memory_clock_mhz,
        }
    }

    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        out.push(match self.cache {
            CacheState::Flushed => 0,
            CacheState::AsLeft => 1,
        });
        for value in self.sm_clock_mhz.iter().chain(&self.memory_clock_mhz) {
            out.extend_from_slice(&value.to_le_bytes());
        }
    }

    pub(super) fn decode(bytes: &[u8]) -> io::Result<CostFacts> {
        let mut at = Reader { bytes, at: 0 };
        let cache = match at.take::<1>()?[0] {
            0 => CacheState::Flushed,
            _ => CacheState::AsLeft,
        };
        Ok(CostFacts {
            cache,
            sm_clock_mhz: [at.u32()?, at.u32()?],
            memory_clock_mhz: [at.u32()?, at.u32()?],
        })
    }
}

/// The counter names of one process, each given a number the first time it is met.
#[derive(Default)]
pub(super) struct Names {
    numbers: FxHashMap<String, u32>,
    names: Vec<String>,
    /// The number after the one given last: the records' counters come in the same order again
    /// and again (one pass's after another's), or the same many times (a window's passes one
    /// after another), so most names are found there, before it or at 0, without hashing them.
    next: usize,
}

impl Names {
    pub(super) fn number(&mut self, name: &str) -> u32 {
        for at in [self.next, self.next.wrapping_sub(1), 0] {
            if self.names.get(at).is_some_and(|n| n == name) {
                self.next = at + 1;
                return at as u32;
            }
        }
        if let Some(&number) = self.numbers.get(name) {
            self.next = number as usize + 1;
            return number;
        }
        let number = self.names.len() as u32;
        self.next = self.names.len() + 1;
        self.names.push(name.to_string());
        self.numbers.insert(name.to_string(), number);
        number
    }

    pub(super) fn name(&self, number: u32) -> io::Result<&str> {
        self.names
            .get(number as usize)
            .map(String::as_str)
            .ok_or_else(|| io::Error::other("a sorted record names an unknown counter"))
    }
}

/// What the events need of a dispatch pass.
#[derive(Clone, Debug, Default)]
pub(super) struct Pass {
    /// The record, without its counters and ranges.
    pub(super) record: DispatchRecord,
    /// Its counters: names' numbers (see [`Names`]) and values.
    pub(super) counters: Vec<(u32, f64)>,
}

/// Appends `record` to `out`.
pub(super) fn encode_record(record: &DispatchRecord, names: &mut Names, out: &mut Vec<u8>) {
    for value in [
        record.dispatch_id,
        record.correlation_id,
        record.agent_id,
        record.stream_id,
        record.tid,
        record.kernel_id,
        record.start_ns,
        record.end_ns,
    ] {
        out.extend_from_slice(&value.to_le_bytes());
    }
    let pass = record.replay_pass.map_or(0, |p| u64::from(p) + 1);
    for value in [record.pid, record.dynamic_shared_bytes]
        .iter()
        .chain(&record.grid)
        .chain(&record.block)
    {
        out.extend_from_slice(&value.to_le_bytes());
    }
    out.extend_from_slice(&pass.to_le_bytes());
    out.extend_from_slice(&(record.counters.len() as u32).to_le_bytes());
    for sample in &record.counters {
        out.extend_from_slice(&names.number(&sample.name).to_le_bytes());
        out.extend_from_slice(&sample.value.to_bits().to_le_bytes());
    }
}

/// The pass [`encode_record`] wrote.
#[cfg(test)]
pub(super) fn decode_record(bytes: &[u8]) -> io::Result<Pass> {
    let mut pass = Pass::default();
    decode_record_into(bytes, &mut pass)?;
    Ok(pass)
}

/// Sets `pass` to the pass [`encode_record`] wrote, in the list it holds.
pub(super) fn decode_record_into(bytes: &[u8], pass: &mut Pass) -> io::Result<()> {
    let mut at = Reader { bytes, at: 0 };
    let record = &mut pass.record;
    (
        record.dispatch_id,
        record.correlation_id,
        record.agent_id,
        record.stream_id,
    ) = (at.u64()?, at.u64()?, at.u64()?, at.u64()?);
    (record.tid, record.kernel_id, record.start_ns, record.end_ns) =
        (at.u64()?, at.u64()?, at.u64()?, at.u64()?);
    (record.pid, record.dynamic_shared_bytes) = (at.u32()?, at.u32()?);
    record.grid = [at.u32()?, at.u32()?, at.u32()?];
    record.block = [at.u32()?, at.u32()?, at.u32()?];
    record.replay_pass = match at.u64()? {
        0 => None,
        pass => Some((pass - 1) as u32),
    };
    let count = at.u32()? as usize;
    pass.counters.clear();
    for _ in 0..count {
        pass.counters.push((at.u32()?, f64::from_bits(at.u64()?)));
    }
    Ok(())
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        let field = self
            .bytes
            .get(self.at..self.at + N)
            .ok_or_else(|| io::Error::other("a sorted record ends early"))?;
        self.at += N;
        Ok(field.try_into().expect("N bytes"))
    }

    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(self.take()?))
    }

    fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_le_bytes(self.take()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::CounterSample;

    #[test]
    fn a_record_and_a_cost_read_back_as_written() {
        let mut names = Names::default();
        for pass in [None, Some(0), Some(3)] {
            let record = crate::testdata::dispatch(
                7,
                42,
                pass,
                vec![
                    CounterSample {
                        name: "SQ_WAVES".into(),
                        value: 1.5,
                    },
                    CounterSample {
                        name: "X".into(),
                        value: f64::NAN,
                    },
                ],
            );
            let mut record = record;
            record.ranges = vec!["step 1".into(), "kreplay-sim@tail".into()];
            let mut bytes = Vec::new();
            encode_record(&record, &mut names, &mut bytes);
            let back = decode_record(&bytes).unwrap();
            assert_eq!(back.record.replay_pass, pass);
            let named: Vec<_> = (back.counters.iter())
                .map(|&(n, v)| (names.name(n).unwrap().to_string(), v.to_bits()))
                .collect();
            let expected: Vec<_> = (record.counters.iter())
                .map(|c| (c.name.to_string(), c.value.to_bits()))
                .collect();
            assert_eq!(named, expected);
            record.counters.clear();
            record.ranges.clear();
            assert_eq!(format!("{:?}", back.record), format!("{record:?}"));
        }
        let facts = CostFacts {
            cache: CacheState::Flushed,
            sm_clock_mhz: [1755, 1980],
            memory_clock_mhz: [0, 2619],
        };
        let mut bytes = Vec::new();
        facts.encode(&mut bytes);
        assert_eq!(CostFacts::decode(&bytes).unwrap(), facts);
    }
}
