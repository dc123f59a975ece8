//! Record blocks of a process's traces (issue 49): its markers, API calls with their arguments,
//! memory copies and allocations, besides their rows, as compact blocks of up to
//! [`TRACE_BLOCK_RECORDS`] records each (`kreplay_record_block`, a kind per [`TraceKind`]),
//! which the readers decode (`db::read_trace_blocks`) instead of joining five to eight tables
//! per row (a traced run's JSON and Perfetto spent two thirds of their time in SQLite reading
//! them, 0.1 M dispatches a second).
//!
//! As with the passes' blocks (`db::blocks`), the rows stay what rocpd's tools and the views
//! read, and a block holds exactly what reading its records' rows gives: the process's pid, a
//! mark's end at its start, an allocation's agent only where it allocates, the arguments as the
//! text the rows hold. A block's `first_row` and `last_row` are its first and last records'
//! events (`rocpd_event` ids, which order every kind as recorded: a marker is a row of one of
//! two tables), each record written as its event's difference from the one before. Names
//! (functions, argument types and names, operations, domains) are written once per block and
//! then by their number in it. A block is written when it is full, before another process's
//! rows and when the file is closed; a process's blocks of a kind are read only where the file
//! stores how many records of that kind it has (`db::record_counts`, written when the file is
//! closed whole) and its blocks hold as many. A merge moves them with the events
//! (`db::bulk_merge`).

use super::file::DbFile;
use crate::api::{ApiDomain, ApiRecord};
use crate::error::FormatError;
use crate::markers::{MarkerKind, MarkerRecord};
use crate::memory::{MemoryAllocationRecord, MemoryCopyRecord};
use crate::run::TraceKind;
use crate::varint::{put, zigzag};
use std::borrow::Cow;
use std::collections::HashMap;

/// How many records a block holds at most (a page of the rows' readers).
pub(super) const TRACE_BLOCK_RECORDS: i64 = super::trace_order::TRACE_PAGE_ROWS;

/// `kreplay_record_block.kind` of `kind`'s blocks (the passes' and costs' are 0 and 1).
pub(super) fn block_kind(kind: TraceKind) -> i64 {
    2 + TraceKind::ALL
        .iter()
        .position(|k| *k == kind)
        .expect("every kind") as i64
}

/// An API call's argument as its row holds it: position, type, name, value.
pub(super) type ArgRow<'a> = (u32, &'a str, &'a str, Cow<'a, str>);

/// The blocks of a process's traces being filled, one per kind.
pub(super) struct TraceBlocks([TraceBlock; 4]);

impl TraceBlocks {
    pub(super) fn new() -> TraceBlocks {
        TraceBlocks(TraceKind::ALL.map(|kind| TraceBlock::new(block_kind(kind))))
    }

    fn block(&mut self, kind: TraceKind) -> &mut TraceBlock {
        &mut self.0[block_kind(kind) as usize - 2]
    }

    /// Writes the blocks so far (inside a transaction).
    pub(super) fn flush(&mut self, db: &DbFile, guid: &str) -> Result<(), FormatError> {
        self.0
            .iter_mut()
            .try_for_each(|block| block.flush(db, guid))
    }

    /// Adds the marker of event `event`.
    pub(super) fn push_marker(
        &mut self,
        db: &DbFile,
        guid: &str,
        event: i64,
        marker: &MarkerRecord,
    ) -> Result<(), FormatError> {
        let block = self.block(TraceKind::Markers);
        block.start_record(db, guid, event)?;
        block.name(marker.kind.as_str());
        block.id(marker.id);
        block.name(&marker.operation);
        block.name(&marker.domain);
        block.text(&marker.message);
        put(&mut block.data, u64::from(marker.category));
        put(&mut block.data, marker.tid);
        // A mark's row has one timestamp: it reads back as its start and its end.
        let end = match marker.kind {
            MarkerKind::Mark => None,
            _ => Some(marker.end_ns),
        };
        block.times(marker.start_ns, end);
        Ok(())
    }

    /// Adds the API call of event `event`, with its arguments as their rows hold them.
    pub(super) fn push_api_call(
        &mut self,
        db: &DbFile,
        guid: &str,
        event: i64,
        call: &ApiRecord,
        args: &[ArgRow<'_>],
    ) -> Result<(), FormatError> {
        let block = self.block(TraceKind::ApiCalls);
        block.start_record(db, guid, event)?;
        block.id(call.correlation_id);
        put(&mut block.data, call.parent_id);
        put(&mut block.data, domain_number(call.domain));
        block.name(&call.function);
        put(&mut block.data, call.tid);
        block.times(call.start_ns, Some(call.end_ns));
        put(&mut block.data, args.len() as u64);
        for (position, ty, name, value) in args {
            put(&mut block.data, u64::from(*position));
            block.name(ty);
            block.name(name);
            block.text(value);
        }
        Ok(())
    }

    /// Adds the memory copy of event `event`.
    pub(super) fn push_copy(
        &mut self,
        db: &DbFile,
        guid: &str,
        event: i64,
        copy: &MemoryCopyRecord,
    ) -> Result<(), FormatError> {
        let block = self.block(TraceKind::Copies);
        block.start_record(db, guid, event)?;
        block.id(copy.id);
        block.name(&copy.operation);
        block.name(copy.direction.as_str());
        block.optional([copy.src_agent, copy.dst_agent]);
        for value in [
            copy.src_address,
            copy.dst_address,
            copy.bytes,
            copy.stream_id,
            copy.tid,
        ] {
            put(&mut block.data, value);
        }
        block.times(copy.start_ns, Some(copy.end_ns));
        Ok(())
    }

    /// Adds the allocation or free of event `event`.
    pub(super) fn push_allocation(
        &mut self,
        db: &DbFile,
        guid: &str,
        event: i64,
        allocation: &MemoryAllocationRecord,
    ) -> Result<(), FormatError> {
        let block = self.block(TraceKind::Allocations);
        block.start_record(db, guid, event)?;
        block.id(allocation.id);
        block.name(allocation.operation.as_str());
        block.name(&allocation.memory);
        block.name(&allocation.api);
        // Its row names an agent only where it allocates (`db::memory`).
        let agent = allocation
            .agent_id
            .filter(|_| allocation.operation.allocates());
        block.optional([agent, allocation.stream_id]);
        for value in [allocation.address, allocation.size, allocation.tid] {
            put(&mut block.data, value);
        }
        block.times(allocation.start_ns, Some(allocation.end_ns));
        Ok(())
    }
}

/// An API domain's number in a block.
pub(super) fn domain_number(domain: ApiDomain) -> u64 {
    match domain {
        ApiDomain::Runtime => 0,
        ApiDomain::Driver => 1,
    }
}

/// The block of one kind being filled.
struct TraceBlock {
    kind: i64,
    data: Vec<u8>,
    count: i64,
    first_event: i64,
    last_event: i64,
    /// The last record's id (correlation id, marker, copy or allocation id) and start: records
    /// are written as differences from the one before in their block.
    last_id: u64,
    last_start: u64,
    /// The names written so far in the block, by their number.
    names: HashMap<Box<str>, u64>,
}

impl TraceBlock {
    fn new(kind: i64) -> TraceBlock {
        TraceBlock {
            kind,
            data: Vec::new(),
            count: 0,
            first_event: 0,
            last_event: 0,
            last_id: 0,
            last_start: 0,
            names: HashMap::new(),
        }
    }

    /// Makes room for the record of event `event`: the block so far is written first where it
    /// is full.
    fn start_record(&mut self, db: &DbFile, guid: &str, event: i64) -> Result<(), FormatError> {
        if self.count >= TRACE_BLOCK_RECORDS {
            self.flush(db, guid)?;
        }
        if self.count == 0 {
            self.first_event = event;
            self.last_event = event;
            self.last_id = 0;
            self.last_start = 0;
            self.names.clear();
        }
        put(&mut self.data, event.wrapping_sub(self.last_event) as u64);
        self.last_event = event;
        self.count += 1;
        Ok(())
    }

    fn id(&mut self, id: u64) {
        put(&mut self.data, zigzag(id.wrapping_sub(self.last_id)));
        self.last_id = id;
    }

    /// A name: its number + 1 where the block has it, else 0, its length and its bytes.
    fn name(&mut self, name: &str) {
        match self.names.get(name) {
            Some(number) => put(&mut self.data, number + 1),
            None => {
                put(&mut self.data, 0);
                self.text(name);
                let number = self.names.len() as u64;
                self.names.insert(name.into(), number);
            }
        }
    }

    fn text(&mut self, text: &str) {
        put(&mut self.data, text.len() as u64);
        self.data.extend_from_slice(text.as_bytes());
    }

    /// Two optional values: a byte of which are there, then those that are.
    fn optional(&mut self, values: [Option<u64>; 2]) {
        let present = u64::from(values[0].is_some()) | u64::from(values[1].is_some()) << 1;
        put(&mut self.data, present);
        for value in values.into_iter().flatten() {
            put(&mut self.data, value);
        }
    }

    /// The start (from the last record's) and, unless it is none, the end (from the start).
    fn times(&mut self, start: u64, end: Option<u64>) {
        put(&mut self.data, zigzag(start.wrapping_sub(self.last_start)));
        self.last_start = start;
        if let Some(end) = end {
            put(&mut self.data, zigzag(end.wrapping_sub(start)));
        }
    }

    /// Writes the block so far as a row (inside a transaction).
    fn flush(&mut self, db: &DbFile, guid: &str) -> Result<(), FormatError> {
        if self.count == 0 {
            return Ok(());
        }
        let rows = (self.first_event, self.last_event, self.count);
        super::blocks::insert_block(db, guid, self.kind, rows, &self.data)?;
        self.data.clear();
        self.count = 0;
        Ok(())
    }
}
