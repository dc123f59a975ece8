//! Record blocks (issue 49): a process's dispatch passes and replay costs, besides their rows,
//! as compact binary blocks of up to a page of records each (`kreplay_record_block`), which
//! the readers decode instead of stepping through three tables' rows and their columns
//! (reading the rows cost 2.5–6 times SQLite's own scan, more than most writers).
//!
//! The rows stay what rocpd's tools, the views and every other reader read; a block holds
//! exactly what reading its rows gives: a pass's dispatch fields are those of the dispatch row
//! it belongs to (its dispatch's first pass), a grid is 0 on an axis whose block is 0 (rows
//! keep the grid in threads), a value is what SQLite gives back (NaN for NaN, 0 for -0).
//! Blocks are written in row order, each when a page of row ids (`pages::PAGE_ROWS`, the ranges
//! the readers read by) is complete, and the last when the file is closed (or another process's
//! rows begin); a block never spans two pages. A process's blocks of one kind are read only where
//! their record counts add up to the process's count of that kind (`StoredProcess::blocks`);
//! a file without them (an older kreplay's, a file whose writer was killed before it closed
//! it) is read by its rows, as before. A merge moves each appended file's blocks with its rows
//! (`db::bulk_merge`). The readers are `db::read_blocks`.

use super::file::DbFile;
use super::pages::PAGE_ROWS;
use crate::error::FormatError;
use crate::records::*;
use crate::varint::{put, zigzag};

/// `kreplay_record_block.kind` of blocks of dispatch passes (rows of `kreplay_dispatch_pass`).
pub(super) const PASSES: i64 = 0;
/// `kreplay_record_block.kind` of blocks of replay costs (rows of `kreplay_replay_cost`).
pub(super) const COSTS: i64 = 1;

/// What a pass takes from its dispatch's row, as reading the row gives it.
#[derive(Clone, PartialEq, Default)]
pub(super) struct DispatchFields {
    pub(super) dispatch_id: u64,
    pub(super) correlation_id: u64,
    pub(super) agent_id: u64,
    pub(super) stream_id: u64,
    pub(super) tid: u64,
    pub(super) kernel_id: u64,
    pub(super) grid: [u32; 3],
    pub(super) block: [u32; 3],
    pub(super) dynamic_shared_bytes: u32,
    pub(super) ranges: Vec<String>,
}

impl DispatchFields {
    /// The fields of the dispatch row that `record` (its dispatch's first pass) makes.
    pub(super) fn of(record: &DispatchRecord) -> DispatchFields {
        let mut grid = record.grid;
        // The row keeps grid × block threads: a block of 0 reads back as a grid of 0.
        for (grid, block) in grid.iter_mut().zip(record.block) {
            if block == 0 {
                *grid = 0;
            }
        }
        DispatchFields {
            dispatch_id: record.dispatch_id,
            correlation_id: record.correlation_id,
            agent_id: record.agent_id,
            stream_id: record.stream_id,
            tid: record.tid,
            kernel_id: record.kernel_id,
            grid,
            block: record.block,
            dynamic_shared_bytes: record.dynamic_shared_bytes,
            ranges: record.ranges.clone(),
        }
    }

    /// The record of one pass of the dispatch (of process `pid`): its pass, start and end,
    /// and its counters.
    pub(super) fn record(
        &self,
        pid: u32,
        (replay_pass, start_ns, end_ns): (Option<u32>, u64, u64),
        counters: Vec<CounterSample>,
    ) -> DispatchRecord {
        DispatchRecord {
            dispatch_id: self.dispatch_id,
            replay_pass,
            correlation_id: self.correlation_id,
            agent_id: self.agent_id,
            stream_id: self.stream_id,
            pid,
            tid: self.tid,
            kernel_id: self.kernel_id,
            grid: self.grid,
            block: self.block,
            dynamic_shared_bytes: self.dynamic_shared_bytes,
            start_ns,
            end_ns,
            counters,
            ranges: self.ranges.clone(),
        }
    }
}

/// A value as SQLite's REAL column gives it back: NaN (stored as NULL) as `f64::NAN`, -0 as 0.
fn stored_value(value: f64) -> f64 {
    if value.is_nan() {
        f64::NAN
    } else if value == 0.0 {
        0.0
    } else {
        value
    }
}

/// Integers below this are exact in an f64.
const EXACT: f64 = (1u64 << 53) as f64;

/// A counter value: a whole number from 0 to 2^53 (most counters count) as the varint of twice
/// it, anything else as 1 and its 8 bytes.
fn put_value(b: &mut Vec<u8>, value: f64) {
    if (0.0..EXACT).contains(&value) && value.fract() == 0.0 {
        put(b, (value as u64) << 1);
    } else {
        put(b, 1);
        b.extend_from_slice(&value.to_bits().to_le_bytes());
    }
}

/// An enum's name (`as_str`): 0 where it is `last`'s, else its length + 1 and its bytes.
fn put_name(b: &mut Vec<u8>, name: &'static str, last: &mut &'static str) {
    if name == *last {
        put(b, 0);
    } else {
        put(b, name.len() as u64 + 1);
        b.extend_from_slice(name.as_bytes());
        *last = name;
    }
}

/// The block of one kind being filled by a process's writer.
pub(super) struct BlockBuffer {
    kind: i64,
    data: Vec<u8>,
    count: i64,
    first_row: i64,
    last_row: i64,
    /// The last pass's dispatch fields and start, or the last cost's dispatch id: records are
    /// written as differences from the one before in their block.
    last_fields: DispatchFields,
    last_start: u64,
    last_dispatch: u64,
    last_names: [&'static str; 3],
}

impl BlockBuffer {
    pub(super) fn new(kind: i64) -> BlockBuffer {
        BlockBuffer {
            kind,
            data: Vec::new(),
            count: 0,
            first_row: 0,
            last_row: 0,
            last_fields: DispatchFields::default(),
            last_start: 0,
            last_dispatch: 0,
            last_names: [""; 3],
        }
    }

    /// Makes room for the record of row `row`: the block so far is written first where it is
    /// full or `row` starts another page of row ids.
    fn start_record(&mut self, db: &DbFile, guid: &str, row: i64) -> Result<(), FormatError> {
        let page = |row: i64| (row - 1).div_euclid(PAGE_ROWS);
        if self.count > 0 && (self.count >= PAGE_ROWS || page(row) != page(self.first_row)) {
            self.flush(db, guid)?;
        }
        if self.count == 0 {
            self.first_row = row;
            self.last_row = row;
            self.last_fields = DispatchFields::default();
            self.last_start = 0;
            self.last_dispatch = 0;
            self.last_names = [""; 3];
        }
        put(&mut self.data, (row - self.last_row) as u64);
        self.last_row = row;
        self.count += 1;
        Ok(())
    }

    /// Adds the pass of row `row` (of `kreplay_dispatch_pass`): `record`'s pass, times and
    /// `values` (counter rows and values, in the order of their rows), `fields` those of its
    /// dispatch's row.
    pub(super) fn push_pass(
        &mut self,
        db: &DbFile,
        guid: &str,
        row: i64,
        fields: &DispatchFields,
        record: &DispatchRecord,
        values: &[(i64, f64)],
    ) -> Result<(), FormatError> {
        self.start_record(db, guid, row)?;
        let same = *fields == self.last_fields;
        let flags = u8::from(record.replay_pass.is_some()) | (u8::from(same) << 1);
        let b = &mut self.data;
        b.push(flags);
        if let Some(pass) = record.replay_pass {
            put(b, u64::from(pass));
        }
        if !same {
            let last = &self.last_fields;
            put(b, zigzag(fields.dispatch_id.wrapping_sub(last.dispatch_id)));
            put(
                b,
                zigzag(fields.correlation_id.wrapping_sub(last.correlation_id)),
            );
            for value in [
                fields.agent_id,
                fields.stream_id,
                fields.tid,
                fields.kernel_id,
            ] {
                put(b, value);
            }
            for value in fields.grid.iter().chain(&fields.block) {
                put(b, u64::from(*value));
            }
            put(b, u64::from(fields.dynamic_shared_bytes));
            put(b, fields.ranges.len() as u64);
            for range in &fields.ranges {
                put(b, range.len() as u64);
                b.extend_from_slice(range.as_bytes());
            }
            self.last_fields = fields.clone();
        }
        put(b, zigzag(record.start_ns.wrapping_sub(self.last_start)));
        put(b, zigzag(record.end_ns.wrapping_sub(record.start_ns)));
        self.last_start = record.start_ns;
        put(b, values.len() as u64);
        for (pmc_row, value) in values {
            put(b, *pmc_row as u64);
            put_value(b, stored_value(*value));
        }
        Ok(())
    }

    /// Adds the replay cost of row `row` (of `kreplay_replay_cost`).
    pub(super) fn push_cost(
        &mut self,
        db: &DbFile,
        guid: &str,
        row: i64,
        cost: &ReplayCost,
    ) -> Result<(), FormatError> {
        self.start_record(db, guid, row)?;
        let b = &mut self.data;
        put(b, zigzag(cost.dispatch_id.wrapping_sub(self.last_dispatch)));
        self.last_dispatch = cost.dispatch_id;
        put(b, cost.agent_id);
        let names = [
            cost.outcome.as_str(),
            cost.staging.as_str(),
            cost.cache.as_str(),
        ];
        for (name, last) in names.into_iter().zip(&mut self.last_names) {
            put_name(b, name, last);
        }
        put(b, u64::from(cost.passes));
        for value in [
            cost.bytes_tracked,
            cost.bytes_snapshotted,
            cost.bytes_restored,
            cost.drain_ns,
            cost.snapshot_ns,
            cost.restore_ns,
            cost.timing_execution_ns,
        ] {
            put(b, value);
        }
        put(b, cost.pass_ns.len() as u64);
        for value in &cost.pass_ns {
            put(b, *value);
        }
        for value in cost.sm_clock_mhz.iter().chain(&cost.memory_clock_mhz) {
            put(b, u64::from(*value));
        }
        Ok(())
    }

    /// Writes the block so far as a row (inside a transaction).
    pub(super) fn flush(&mut self, db: &DbFile, guid: &str) -> Result<(), FormatError> {
        if self.count == 0 {
            return Ok(());
        }
        let rows = (self.first_row, self.last_row, self.count);
        insert_block(db, guid, self.kind, rows, &self.data)?;
        self.data.clear();
        self.count = 0;
        Ok(())
    }
}

/// Inserts a block of `kind` of process `guid`: its (first row, last row, record count) and its
/// bytes (inside a transaction).
pub(super) fn insert_block(
    db: &DbFile,
    guid: &str,
    kind: i64,
    (first_row, last_row, count): (i64, i64, i64),
    data: &[u8],
) -> Result<(), FormatError> {
    db.conn
        .prepare_cached(
            r#"INSERT INTO kreplay_record_block (guid, kind, first_row, last_row, "count", data)
               VALUES (?1, ?2, ?3, ?4, ?5, ?6)"#,
        )
        .and_then(|mut insert| {
            insert.execute(rusqlite::params![
                guid, kind, first_row, last_row, count, data
            ])
        })
        .map_err(|e| db.err(e))?;
    Ok(())
}
