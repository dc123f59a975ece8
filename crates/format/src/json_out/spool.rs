//! The counter records of a process, kept from the one read of its dispatches until their
//! place in the document (`callback_records.counter_collection`, after `buffer_records`) comes:
//! each [`CounterRecord`] as a few variable-length integers in a temporary file (a launch met
//! before in the block by its number), about 30 bytes a record where its JSON is 550 (issue 49: the JSON text of 10^6 dispatches' counter records
//! was a 1.1 GB temporary file, written and read back; reading the database a second time costs
//! more CPU than both). Memory holds one block of records at a time; each block is read back
//! alone ([`Blocks`], [`decode_block`]), so blocks can be formatted on several threads.

use super::dispatch_json::{CounterRecord, CounterValue, Handle, Launch};
use crate::varint::{put as varint, take, unzigzag, zigzag};
use rustc_hash::FxHashMap;
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::path::Path;

/// The bytes gathered before they are written to the file as one block: about 2,900 records,
/// 1.6 MB of JSON.
const BLOCK: usize = 128 << 10;

/// Counter records written one after another, then read back in order, a block at a time
/// ([`Self::into_blocks`]).
pub(super) struct CounterSpool {
    block: Vec<u8>,
    /// Where full blocks go, created with the first one: a process whose counter records fit
    /// one block keeps them in memory.
    file: Option<File>,
    dir: std::path::PathBuf,
    /// The start timestamp of the record before in the block (timestamps are written as
    /// differences; a block's first from 0).
    start: u64,
    /// The launches met in the block ([`Launch`]), numbered from 1 as met: a record of one
    /// met before gives its number, of a new one 0 and its fields.
    launches: FxHashMap<Launch, u64>,
}

impl CounterSpool {
    /// A spool whose file, if one is needed, is an anonymous temporary file in `dir`.
    pub(super) fn new(dir: &Path) -> CounterSpool {
        CounterSpool {
            block: Vec::with_capacity(BLOCK + 4096),
            file: None,
            dir: dir.to_path_buf(),
            start: 0,
            launches: FxHashMap::default(),
        }
    }

    pub(super) fn push(&mut self, r: &CounterRecord) -> io::Result<()> {
        let b = &mut self.block;
        let data = &r.dispatch_data;
        let info = &data.dispatch_info;
        for value in [r.accum_vgpr_count, r.arch_vgpr_count, r.lds_block_size_v] {
            varint(b, value);
        }
        let c = &data.correlation_id;
        for value in [c.ancestor, c.external, c.internal] {
            varint(b, value);
        }
        varint(b, zigzag(data.start_timestamp.wrapping_sub(self.start)));
        varint(b, data.end_timestamp.wrapping_sub(data.start_timestamp));
        self.start = data.start_timestamp;
        varint(b, data.size);
        varint(b, info.agent_id.handle);
        varint(b, info.dispatch_id);
        let launch = info.launch();
        let next = self.launches.len() as u64 + 1;
        match self.launches.entry(launch) {
            std::collections::hash_map::Entry::Occupied(number) => varint(b, *number.get()),
            std::collections::hash_map::Entry::Vacant(new) => {
                new.insert(next);
                varint(b, 0);
                for value in launch {
                    varint(b, value);
                }
            }
        }
        varint(b, r.records.len() as u64);
        for value in &r.records {
            varint(b, value.counter_id.handle);
            b.extend_from_slice(&value.value.to_bits().to_le_bytes());
        }
        varint(b, r.replay_pass.map_or(0, |pass| u64::from(pass) + 1));
        for value in [r.sgpr_count, r.stream_id.handle, r.thread_id] {
            varint(b, value);
        }
        if self.block.len() >= BLOCK {
            self.write_block()?;
        }
        Ok(())
    }

    /// Writes the gathered block, its length first.
    fn write_block(&mut self) -> io::Result<()> {
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(tempfile::tempfile_in(&self.dir)?),
        };
        file.write_all(&(self.block.len() as u64).to_le_bytes())?;
        file.write_all(&self.block)?;
        self.block.clear();
        self.start = 0;
        self.launches.clear();
        Ok(())
    }

    /// The blocks of every record pushed, in order; the file is gone when they are.
    pub(super) fn into_blocks(mut self) -> io::Result<Blocks> {
        if let Some(file) = &mut self.file {
            file.rewind()?;
        }
        Ok(Blocks {
            file: self.file.take(),
            last: Some(std::mem::take(&mut self.block)),
        })
    }
}

/// A spool's blocks, read back one at a time.
pub(super) struct Blocks {
    file: Option<File>,
    /// The block that was never written to the file.
    last: Option<Vec<u8>>,
}

impl Blocks {
    /// Reads the next block into `block`; false when none is left.
    pub(super) fn next_into(&mut self, block: &mut Vec<u8>) -> io::Result<bool> {
        block.clear();
        if let Some(file) = &mut self.file {
            let mut length = [0; 8];
            match file.read_exact(&mut length) {
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => self.file = None,
                read => {
                    read?;
                    let length = u64::from_le_bytes(length);
                    file.take(length).read_to_end(block)?;
                    if block.len() as u64 != length {
                        return Err(truncated());
                    }
                    return Ok(true);
                }
            }
        }
        match self.last.take() {
            Some(last) if !last.is_empty() => {
                *block = last;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// Hands each record of `block` (one of [`Blocks`]) to `each`, decoded into `record`.
pub(super) fn decode_block(
    mut block: &[u8],
    record: &mut CounterRecord,
    mut each: impl FnMut(&CounterRecord) -> io::Result<()>,
) -> io::Result<()> {
    let (mut start, mut launches) = (0, Vec::new());
    while !block.is_empty() {
        decode(&mut block, record, (&mut start, &mut launches)).ok_or_else(truncated)?;
        each(record)?;
    }
    Ok(())
}

/// Reads one record from the front of `b` into `r`; None: `b` ends within it.
fn decode(
    b: &mut &[u8],
    r: &mut CounterRecord,
    (start, launches): (&mut u64, &mut Vec<Launch>),
) -> Option<()> {
    r.accum_vgpr_count = take(b)?;
    r.arch_vgpr_count = take(b)?;
    r.lds_block_size_v = take(b)?;
    let data = &mut r.dispatch_data;
    let c = &mut data.correlation_id;
    c.ancestor = take(b)?;
    c.external = take(b)?;
    c.internal = take(b)?;
    *start = start.wrapping_add(unzigzag(take(b)?));
    data.start_timestamp = *start;
    data.end_timestamp = start.wrapping_add(take(b)?);
    data.size = take(b)?;
    let info = &mut data.dispatch_info;
    info.agent_id.handle = take(b)?;
    info.dispatch_id = take(b)?;
    let number = match take(b)? {
        0 => {
            let mut launch = Launch::default();
            for value in &mut launch {
                *value = take(b)?;
            }
            launches.push(launch);
            launches.len()
        }
        number => usize::try_from(number).ok()?,
    };
    info.set_launch(launches.get(number.checked_sub(1)?)?);
    let count = take(b)?;
    r.records.clear();
    for _ in 0..count {
        let handle = take(b)?;
        let (bits, rest) = b.split_first_chunk::<8>()?;
        *b = rest;
        r.records.push(CounterValue {
            counter_id: Handle { handle },
            value: f64::from_bits(u64::from_le_bytes(*bits)),
        });
    }
    r.replay_pass = match take(b)? {
        0 => None,
        pass => Some(u32::try_from(pass - 1).ok()?),
    };
    r.sgpr_count = take(b)?;
    r.stream_id.handle = take(b)?;
    r.thread_id = take(b)?;
    Some(())
}

fn truncated() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "the JSON writer's temporary file of counter records was cut short: check the output \
         folder's disk",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seed: u64) -> CounterRecord {
        let mut r = CounterRecord {
            arch_vgpr_count: seed % 255,
            lds_block_size_v: seed * 1024,
            ..CounterRecord::default()
        };
        r.dispatch_data.correlation_id.internal = seed * 3;
        r.dispatch_data.correlation_id.external = seed % 2;
        // Timestamps that go back, wrap and end before they start.
        r.dispatch_data.start_timestamp =
            [u64::MAX - seed, seed * 1_000_003, 1 << 62][seed as usize % 3];
        r.dispatch_data.end_timestamp = r
            .dispatch_data
            .start_timestamp
            .wrapping_add(seed.wrapping_sub(7));
        r.dispatch_data.size = 176;
        let info = &mut r.dispatch_data.dispatch_info;
        info.agent_id.handle = seed % 4 + 1;
        info.dispatch_id = seed;
        // Launches met again (in a block and in the next) and new ones.
        info.grid_size = [(seed % 7) << 40, 1, u64::MAX - seed / 5_000].into();
        info.kernel_id = seed % 9;
        info.queue_id.handle = seed + 5;
        info.workgroup_size = [256, 1, 1].into();
        r.records = (0..seed % 4)
            .map(|i| CounterValue {
                counter_id: Handle { handle: i + 1 },
                value: [f64::NAN, -0.0, 1.5e300, seed as f64][i as usize],
            })
            .collect();
        r.replay_pass = [None, Some(0), Some(u32::MAX)][seed as usize % 3];
        r.stream_id.handle = seed * 7;
        r.thread_id = u64::MAX / (seed + 1);
        r
    }

    fn json(r: &CounterRecord) -> String {
        serde_json::to_string(r).unwrap()
    }

    /// Records come back as they went in, across blocks and within the last one.
    #[test]
    fn replays_every_record_in_order() {
        let dir = tempfile::tempdir().unwrap();
        for count in [0, 3, 40_000] {
            let mut spool = CounterSpool::new(dir.path());
            for seed in 0..count {
                spool.push(&record(seed)).unwrap();
            }
            assert_eq!(spool.file.is_some(), count > 3_000, "{count} records");
            let mut blocks = spool.into_blocks().unwrap();
            let (mut block, mut record_read) = (Vec::new(), CounterRecord::default());
            let (mut seed, mut read) = (0, 0);
            while blocks.next_into(&mut block).unwrap() {
                read += 1;
                decode_block(&block, &mut record_read, |r| {
                    assert_eq!(json(r), json(&record(seed)), "record {seed}");
                    assert_eq!(r.records.len(), record(seed).records.len());
                    seed += 1;
                    Ok(())
                })
                .unwrap();
            }
            assert_eq!(seed, count);
            assert_eq!(read > 1, count > 3_000, "{read} blocks of {count} records");
        }
    }
}
