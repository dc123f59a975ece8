//! A process's dispatch passes as items keyed for the order by dispatch ([`super::order`]),
//! read from its records as they are asked for: the events are made as the records are read,
//! with nothing kept between (issue 49: the records of a long run went through a temporary file
//! for a second read).

use super::order::BY_DISPATCH_KEY;
use super::spilled::{encode_record, Names};
use super::spool::Items;
use crate::progress::Ticker;
use crate::records::DispatchRecord;
use crate::run::{ProcessRun, Records};
use std::cell::RefCell;
use std::io;

/// The passes of a process, each its key (dispatch id, 1 for a record, place in the run) and its
/// payload ([`encode_record`]); counter names numbered in `names` as met.
pub(super) struct RecordItems<'a> {
    records: Records<'a, DispatchRecord>,
    names: &'a RefCell<Names>,
    ticker: &'a Ticker<'a>,
    seq: u64,
}

impl<'a> RecordItems<'a> {
    pub(super) fn new(
        process: &'a ProcessRun,
        names: &'a RefCell<Names>,
        ticker: &'a Ticker<'a>,
    ) -> Self {
        RecordItems {
            records: process.each_dispatch(),
            names,
            ticker,
            seq: 0,
        }
    }
}

impl Items for RecordItems<'_> {
    fn next_into(&mut self, item: &mut Vec<u8>) -> io::Result<bool> {
        let Some(record) = self.records.next() else {
            return Ok(false);
        };
        let record = record.map_err(io::Error::other)?;
        self.ticker.tick();
        item.clear();
        item.extend_from_slice(&record.dispatch_id.to_be_bytes());
        item.push(1);
        item.extend_from_slice(&self.seq.to_be_bytes());
        debug_assert_eq!(item.len(), BY_DISPATCH_KEY);
        encode_record(&record, &mut self.names.borrow_mut(), item);
        self.seq += 1;
        Ok(true)
    }
}
