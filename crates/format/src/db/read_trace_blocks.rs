//! Trace record blocks read back (`db::trace_blocks` writes them and says what they hold): a
//! process's markers, API calls, copies or allocations a block at a time, in the order recorded.
//! The block is copied out of the file under the connection's lock and decoded after it.

use super::pages::StoredProcess;
use super::read_blocks::Cursor;
use super::trace_blocks::block_kind;
use crate::api::{ApiDomain, ApiRecord};
use crate::api_args::{ApiArg, ApiArgs};
use crate::error::FormatError;
use crate::markers::{MarkerKind, MarkerRecord};
use crate::memory::{AllocationOperation, CopyDirection, MemoryAllocationRecord, MemoryCopyRecord};
use crate::run::{TraceCursor, TraceKind};
use crate::varint::unzigzag;
use rusqlite::OptionalExtension;
use std::borrow::Cow;

/// The first block of kind ?2 of process ?1 with an event after ?3.
const NEXT_BLOCK_SQL: &str = "SELECT first_row, last_row, data FROM kreplay_record_block
    WHERE guid = ?1 AND kind = ?2 AND last_row > ?3 ORDER BY last_row LIMIT 1";

/// A block being read ([`Cursor`], its rows the records' events), with the names read so far
/// and the last record's id and start.
struct Block<'b> {
    cursor: Cursor<'b>,
    names: Vec<&'b str>,
    last_id: u64,
    last_start: u64,
}

impl<'b> Block<'b> {
    fn int(&mut self) -> Option<u64> {
        self.cursor.int()
    }

    fn small(&mut self) -> Option<u32> {
        self.cursor.small()
    }

    fn text(&mut self) -> Option<&'b str> {
        self.cursor.text()
    }

    /// A name as `TraceBlock::name` writes it.
    fn name(&mut self) -> Option<&'b str> {
        match self.int()? {
            0 => {
                let name = self.text()?;
                self.names.push(name);
                Some(name)
            }
            number => self.names.get(usize::try_from(number - 1).ok()?).copied(),
        }
    }

    fn id(&mut self) -> Option<u64> {
        self.last_id = self.last_id.wrapping_add(unzigzag(self.int()?));
        Some(self.last_id)
    }

    fn optional(&mut self) -> Option<[Option<u64>; 2]> {
        let present = self.int()?;
        let mut values = [None, None];
        for (bit, value) in values.iter_mut().enumerate() {
            if present >> bit & 1 == 1 {
                *value = Some(self.int()?);
            }
        }
        Some(values)
    }

    /// The start and end; the end is the start where the block has none.
    fn times(&mut self, has_end: bool) -> Option<(u64, u64)> {
        let start = self.last_start.wrapping_add(unzigzag(self.int()?));
        self.last_start = start;
        let end = match has_end {
            true => start.wrapping_add(unzigzag(self.int()?)),
            false => start,
        };
        Some((start, end))
    }
}

impl StoredProcess {
    /// The records of the next block of `kind` after `at` (the last event taken) that gives
    /// any, each read by `decode` (none: the block is malformed; `Some(None)`: a record left
    /// out); moves `at` past them. Empty: there are no more.
    fn read_trace_blocks<T>(
        &self,
        kind: TraceKind,
        at: &mut TraceCursor,
        mut decode: impl FnMut(&mut Block<'_>) -> Option<Option<T>>,
    ) -> Result<Vec<T>, FormatError> {
        loop {
            let records = self.read_trace_block(kind, at, &mut decode)?;
            if records.as_ref().is_none_or(|records| !records.is_empty()) {
                return Ok(records.unwrap_or_default());
            }
        }
    }

    /// [`Self::read_trace_blocks`] of one block: none where there is no more.
    fn read_trace_block<T>(
        &self,
        kind: TraceKind,
        at: &mut TraceCursor,
        decode: &mut impl FnMut(&mut Block<'_>) -> Option<Option<T>>,
    ) -> Result<Option<Vec<T>>, FormatError> {
        let found = {
            let conn = self.connection();
            let mut statement = conn
                .prepare_cached(&self.own_rows(NEXT_BLOCK_SQL))
                .map_err(self.err())?;
            statement
                .query_row(
                    rusqlite::params![self.guid, block_kind(kind), at[0]],
                    |row| {
                        Ok((
                            row.get::<_, i64>(0)?,
                            row.get::<_, i64>(1)?,
                            row.get::<_, Vec<u8>>(2)?,
                        ))
                    },
                )
                .optional()
                .map_err(self.err())?
        };
        let Some((first, last, data)) = found else {
            return Ok(None);
        };
        let malformed = || {
            (self.corrupt())(format!(
                "a record block (kreplay_record_block, kind {}) is cut short or malformed",
                block_kind(kind)
            ))
        };
        let mut block = Block {
            cursor: Cursor::new(&data, first),
            names: Vec::new(),
            last_id: 0,
            last_start: 0,
        };
        let mut records = Vec::new();
        let mut read = 0;
        while !block.cursor.bytes.is_empty() {
            block.cursor.next_row().ok_or_else(malformed)?;
            records.extend(decode(&mut block).ok_or_else(malformed)?);
            read += 1;
        }
        if block.cursor.row != last || read == 0 {
            return Err(malformed());
        }
        at[0] = last;
        Ok(Some(records))
    }

    pub(super) fn markers_from_blocks(
        &self,
        at: &mut TraceCursor,
    ) -> Result<Vec<MarkerRecord>, FormatError> {
        self.read_trace_blocks(TraceKind::Markers, at, |b| {
            let kind = MarkerKind::parse(b.name()?)?;
            let id = b.id()?;
            let operation = b.name()?.to_string();
            let domain = b.name()?.to_string();
            let message = b.text()?.to_string();
            let category = b.small()?;
            let tid = b.int()?;
            let (start_ns, end_ns) = b.times(kind != MarkerKind::Mark)?;
            Some(Some(MarkerRecord {
                id,
                kind,
                operation,
                domain,
                message,
                category,
                pid: self.pid,
                tid,
                start_ns,
                end_ns,
            }))
        })
    }

    /// The API calls of the next block that has any (of `domain` only, if given), with their
    /// arguments if `args`.
    pub(super) fn api_calls_from_blocks(
        &self,
        at: &mut TraceCursor,
        args: bool,
        domain: Option<ApiDomain>,
    ) -> Result<Vec<ApiRecord>, FormatError> {
        self.read_trace_blocks(TraceKind::ApiCalls, at, |b| {
            let correlation_id = b.id()?;
            let parent_id = b.int()?;
            let of = match b.int()? {
                0 => ApiDomain::Runtime,
                1 => ApiDomain::Driver,
                _ => return None,
            };
            let wanted = domain.is_none_or(|domain| domain == of);
            let args = args && wanted;
            let function = b.name()?;
            let tid = b.int()?;
            let (start_ns, end_ns) = b.times(true)?;
            let count = b.int()?;
            let mut read = Vec::with_capacity(if args { count as usize } else { 0 });
            for _ in 0..count {
                let position = b.small()?;
                let (ty, name, value) = (b.name()?, b.name()?, b.text()?);
                if args {
                    read.push(ApiArg {
                        position,
                        ty: ty.to_string(),
                        name: name.to_string(),
                        value: value.to_string(),
                    });
                }
            }
            // As the rows' reader gives them: in position order, then row order.
            read.sort_by_key(|arg| arg.position);
            Some(wanted.then_some(ApiRecord {
                correlation_id,
                parent_id,
                domain: of,
                function: Cow::Owned(function.to_string()),
                pid: self.pid,
                tid,
                start_ns,
                end_ns,
                args: match read.is_empty() {
                    true => ApiArgs::None,
                    false => ApiArgs::Read(read),
                },
            }))
        })
    }

    pub(super) fn copies_from_blocks(
        &self,
        at: &mut TraceCursor,
    ) -> Result<Vec<MemoryCopyRecord>, FormatError> {
        self.read_trace_blocks(TraceKind::Copies, at, |b| {
            let id = b.id()?;
            let operation = b.name()?.to_string();
            let direction = b.name()?;
            let [src_agent, dst_agent] = b.optional()?;
            let direction = CopyDirection::parse(direction)
                .unwrap_or_else(|| CopyDirection::between(src_agent, dst_agent));
            let mut ints = [0u64; 5];
            for value in &mut ints {
                *value = b.int()?;
            }
            let [src_address, dst_address, bytes, stream_id, tid] = ints;
            let (start_ns, end_ns) = b.times(true)?;
            Some(Some(MemoryCopyRecord {
                id,
                operation,
                direction,
                src_agent,
                dst_agent,
                src_address,
                dst_address,
                bytes,
                stream_id,
                pid: self.pid,
                tid,
                start_ns,
                end_ns,
            }))
        })
    }

    pub(super) fn allocations_from_blocks(
        &self,
        at: &mut TraceCursor,
    ) -> Result<Vec<MemoryAllocationRecord>, FormatError> {
        self.read_trace_blocks(TraceKind::Allocations, at, |b| {
            let id = b.id()?;
            let operation = AllocationOperation::parse(b.name()?)?;
            let memory = b.name()?.to_string();
            let api = b.name()?.to_string();
            let [agent_id, stream_id] = b.optional()?;
            let (address, size, tid) = (b.int()?, b.int()?, b.int()?);
            let (start_ns, end_ns) = b.times(true)?;
            Some(Some(MemoryAllocationRecord {
                id,
                operation,
                memory,
                api,
                agent_id,
                address,
                size,
                stream_id,
                pid: self.pid,
                tid,
                start_ns,
                end_ns,
            }))
        })
    }
}
