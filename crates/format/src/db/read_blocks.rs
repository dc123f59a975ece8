//! Record blocks read back (`db::blocks` writes them and says what they hold): a process's
//! passes or replay costs in a range of row ids decoded from its blocks, and how many records
//! the blocks of each kind hold (`db::read` compares that with the process's counts).

use super::blocks::{DispatchFields, COSTS, PASSES};
use super::pages::{StoredProcess, PAGE_ROWS};
use super::stepped::Stepped;
use crate::error::FormatError;
use crate::records::*;
use crate::varint::{take, unzigzag};
use std::ops::RangeInclusive;

/// The blocks of kind ?2 of process ?1 with a row from ?3 on, in row order.
const BLOCKS_SQL: &str = "SELECT first_row, pmc_base, data FROM kreplay_record_block
    WHERE guid = ?1 AND kind = ?2 AND last_row >= ?3 ORDER BY last_row";

/// How many records the blocks of each kind of process `guid` hold, by kind (passes, costs,
/// then the tracing kinds', `db::trace_blocks`); none where the file has no blocks.
pub(super) fn block_counts(
    conn: &rusqlite::Connection,
    guid: &str,
) -> rusqlite::Result<Option<[usize; 6]>> {
    if !super::file::has_column(conn, "kreplay_record_block", "pmc_base")? {
        return Ok(None);
    }
    let mut counts = [0; 6];
    let mut statement = conn.prepare(
        r#"SELECT kind, sum("count") FROM kreplay_record_block WHERE guid = ?1 GROUP BY kind"#,
    )?;
    let mut rows = statement.query([guid])?;
    while let Some(row) = rows.next()? {
        let (kind, count): (i64, i64) = (row.get(0)?, row.get(1)?);
        if let Some(slot) = usize::try_from(kind).ok().and_then(|k| counts.get_mut(k)) {
            *slot = count as usize;
        }
    }
    Ok(Some(counts))
}

/// A block being read: its bytes, the row of the record last read (for the traces' blocks, its
/// event), and what to add to the counter rows it names.
pub(super) struct Cursor<'b> {
    pub(super) bytes: &'b [u8],
    pub(super) row: i64,
    pmc_base: i64,
}

impl<'b> Cursor<'b> {
    /// A cursor at the start of `bytes`, whose first record's row is `row`.
    pub(super) fn new(bytes: &'b [u8], row: i64) -> Cursor<'b> {
        Cursor {
            bytes,
            row,
            pmc_base: 0,
        }
    }

    pub(super) fn int(&mut self) -> Option<u64> {
        take(&mut self.bytes)
    }

    pub(super) fn small(&mut self) -> Option<u32> {
        u32::try_from(self.int()?).ok()
    }

    pub(super) fn text(&mut self) -> Option<&'b str> {
        let len = usize::try_from(self.int()?).ok()?;
        self.text_of(len)
    }

    fn text_of(&mut self, len: usize) -> Option<&'b str> {
        let (text, rest) = self.bytes.split_at_checked(len)?;
        self.bytes = rest;
        std::str::from_utf8(text).ok()
    }

    /// A counter value as `blocks::put_value` writes it.
    fn value(&mut self) -> Option<f64> {
        match self.int()? {
            1 => {
                let (bits, rest) = self.bytes.split_first_chunk::<8>()?;
                self.bytes = rest;
                Some(f64::from_bits(u64::from_le_bytes(*bits)))
            }
            whole if whole & 1 == 0 => Some((whole >> 1) as f64),
            _ => None,
        }
    }

    pub(super) fn next_row(&mut self) -> Option<i64> {
        self.row = self.row.checked_add(i64::try_from(self.int()?).ok()?)?;
        Some(self.row)
    }
}

impl StoredProcess {
    /// The records of kind `kind` with rows in `rows`, at most `limit`, decoded from the
    /// process's blocks on `conn`; with the row of the last. `decode(cursor, wanted, first)`
    /// reads one record from a block (the first of its block: the differences start again),
    /// giving it where `wanted` (none for a record read past); none where the block is cut
    /// short.
    fn read_blocks<T>(
        &self,
        conn: &rusqlite::Connection,
        kind: i64,
        rows: RangeInclusive<i64>,
        limit: usize,
        mut decode: impl FnMut(&mut Cursor<'_>, bool, bool) -> Option<Option<T>>,
    ) -> Result<(Vec<T>, Option<i64>), FormatError> {
        let err = self.err();
        let sql = self.own_rows(BLOCKS_SQL);
        let mut statement = Stepped::prepare(conn, &sql).map_err(err)?;
        statement
            .run(rusqlite::params![self.guid, kind, rows.start()])
            .map_err(err)?;
        let mut records = Vec::with_capacity(limit.min(PAGE_ROWS as usize));
        let mut last = None;
        let truncated = || {
            (self.corrupt())(format!(
                "a record block (kreplay_record_block, kind {kind}) is cut short or malformed"
            ))
        };
        'blocks: while let Some(row) = statement.next().map_err(err)? {
            let first_row = row.int(0);
            if first_row > *rows.end() || records.len() >= limit {
                break;
            }
            let mut cursor = Cursor {
                bytes: row.blob(2).unwrap_or_default(),
                row: first_row,
                pmc_base: row.int(1),
            };
            let mut first = true;
            while !cursor.bytes.is_empty() {
                let at = cursor.next_row().ok_or_else(truncated)?;
                if at > *rows.end() {
                    break 'blocks;
                }
                let wanted = at >= *rows.start();
                let record = decode(&mut cursor, wanted, first).ok_or_else(truncated)?;
                first = false;
                match record {
                    Some(record) if wanted => {
                        records.push(record);
                        last = Some(at);
                        if records.len() >= limit {
                            break 'blocks;
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok((records, last))
    }

    /// The dispatch passes with rows in `rows` (of `kreplay_dispatch_pass`), at most `limit`,
    /// from the process's blocks; with the row of the last.
    pub(super) fn passes_from_blocks(
        &self,
        conn: &rusqlite::Connection,
        rows: RangeInclusive<i64>,
        limit: usize,
    ) -> Result<(Vec<DispatchRecord>, Option<i64>), FormatError> {
        let mut fields = DispatchFields::default();
        let mut start = 0u64;
        let mut unknown = None;
        let result = self.read_blocks(conn, PASSES, rows, limit, |c, wanted, first| {
            if first {
                (fields, start) = (DispatchFields::default(), 0);
            }
            let flags = *c.bytes.first()?;
            c.bytes = &c.bytes[1..];
            let replay_pass = match flags & 1 {
                0 => None,
                _ => Some(c.small()?),
            };
            if flags & 2 == 0 {
                fields.dispatch_id = fields.dispatch_id.wrapping_add(unzigzag(c.int()?));
                fields.correlation_id = fields.correlation_id.wrapping_add(unzigzag(c.int()?));
                fields.agent_id = c.int()?;
                fields.stream_id = c.int()?;
                fields.tid = c.int()?;
                fields.kernel_id = c.int()?;
                for axis in 0..3 {
                    fields.grid[axis] = c.small()?;
                }
                for axis in 0..3 {
                    fields.block[axis] = c.small()?;
                }
                fields.dynamic_shared_bytes = c.small()?;
                let ranges = c.int()?;
                fields.ranges.clear();
                for _ in 0..ranges {
                    let range = c.text()?.to_string();
                    fields.ranges.push(range);
                }
            }
            start = start.wrapping_add(unzigzag(c.int()?));
            let end = start.wrapping_add(unzigzag(c.int()?));
            let values = c.int()?;
            let mut counters = Vec::with_capacity(if wanted { values as usize } else { 0 });
            for _ in 0..values {
                let pmc_row = (c.int()? as i64).wrapping_add(c.pmc_base);
                let value = c.value()?;
                if wanted {
                    match self.counter_names.get(&pmc_row) {
                        Some(name) => counters.push(CounterSample { name: *name, value }),
                        None => unknown = Some(pmc_row),
                    }
                }
            }
            Some(wanted.then(|| fields.record(self.pid, (replay_pass, start, end), counters)))
        })?;
        if let Some(pmc_row) = unknown {
            return Err((self.corrupt())(format!(
                "a record block refers to unknown counter row {pmc_row}"
            )));
        }
        Ok(result)
    }

    /// The replay costs with rows in `rows` (of `kreplay_replay_cost`), at most `limit`, from
    /// the process's blocks; with the row of the last.
    pub(super) fn costs_from_blocks(
        &self,
        conn: &rusqlite::Connection,
        rows: RangeInclusive<i64>,
        limit: usize,
    ) -> Result<(Vec<ReplayCost>, Option<i64>), FormatError> {
        let mut dispatch_id = 0u64;
        let mut names = Names::default();
        self.read_blocks(conn, COSTS, rows, limit, |c, wanted, first| {
            if first {
                (dispatch_id, names) = (0, Names::default());
            }
            dispatch_id = dispatch_id.wrapping_add(unzigzag(c.int()?));
            let agent_id = c.int()?;
            let outcome = names.outcome.read(c)?;
            let staging = names.staging.read(c)?;
            let cache = names.cache.read(c)?;
            let passes = c.small()?;
            let mut ints = [0u64; 7];
            for value in &mut ints {
                *value = c.int()?;
            }
            let count = c.int()?;
            let mut pass_ns = Vec::with_capacity(if wanted { count as usize } else { 0 });
            for _ in 0..count {
                let value = c.int()?;
                if wanted {
                    pass_ns.push(value);
                }
            }
            let mut mhz = [0u32; 4];
            for value in &mut mhz {
                *value = c.small()?;
            }
            let [bytes_tracked, bytes_snapshotted, bytes_restored, drain_ns, snapshot_ns, restore_ns, timing_execution_ns] =
                ints;
            Some(wanted.then_some(ReplayCost {
                dispatch_id,
                agent_id,
                outcome,
                passes,
                bytes_tracked,
                bytes_snapshotted,
                bytes_restored,
                staging,
                drain_ns,
                snapshot_ns,
                pass_ns,
                restore_ns,
                timing_execution_ns,
                cache,
                sm_clock_mhz: [mhz[0], mhz[1]],
                memory_clock_mhz: [mhz[2], mhz[3]],
            }))
        })
    }
}

/// The enums of the last cost of a block (`blocks::put_name`).
#[derive(Default)]
struct Names {
    outcome: Named<ReplayOutcome>,
    staging: Named<Staging>,
    cache: Named<CacheState>,
}

/// The last value of one enum in a block.
struct Named<T>(Option<T>);

impl<T> Default for Named<T> {
    fn default() -> Self {
        Named(None)
    }
}

impl<T: Copy + serde::de::DeserializeOwned> Named<T> {
    /// The next cost's value: the last one's, or the name that follows parsed.
    fn read(&mut self, c: &mut Cursor<'_>) -> Option<T> {
        match c.int()? {
            0 => self.0,
            len => {
                let len = usize::try_from(len - 1).ok()?;
                let value = super::pages::parse_name(c.text_of(len)?)?;
                self.0 = Some(value);
                Some(value)
            }
        }
    }
}
