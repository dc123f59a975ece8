//! A process's replay costs and dispatch passes as items keyed for the order by dispatch
//! ([`super::order`]), read as they are asked for: the events are made as the records are read,
//! with nothing kept between (issue 49: the records of a long run went through a temporary file
//! for a second read).

use super::order::BY_DISPATCH_KEY;
use super::spilled::{encode_record, CostFacts, Names};
use crate::progress::Ticker;
use crate::records::{DispatchRecord, ReplayCost};
use crate::run::{ProcessRun, Records};
use std::cell::RefCell;
use std::io;

/// Items in order, each its key then its payload.
pub(super) trait Items {
    /// Sets `item` to the next item (key and payload); false after the last.
    fn next_into(&mut self, item: &mut Vec<u8>) -> io::Result<bool>;
}

/// Appends an item's key: dispatch id, cost (0) or record (1), place in the run.
fn key(item: &mut Vec<u8>, dispatch_id: u64, kind: u8, seq: u64) {
    item.clear();
    item.extend_from_slice(&dispatch_id.to_be_bytes());
    item.push(kind);
    item.extend_from_slice(&seq.to_be_bytes());
    debug_assert_eq!(item.len(), BY_DISPATCH_KEY);
}

/// The replay costs of a process, each its key and its payload ([`CostFacts::encode`]).
pub(super) struct CostItems<'a> {
    costs: Records<'a, ReplayCost>,
    ticker: &'a Ticker<'a>,
    seq: u64,
}

impl<'a> CostItems<'a> {
    pub(super) fn new(process: &'a ProcessRun, ticker: &'a Ticker<'a>) -> Self {
        CostItems {
            costs: process.each_cost(),
            ticker,
            seq: 0,
        }
    }
}

impl Items for CostItems<'_> {
    fn next_into(&mut self, item: &mut Vec<u8>) -> io::Result<bool> {
        let Some(cost) = self.costs.next() else {
            return Ok(false);
        };
        let cost = cost.map_err(io::Error::other)?;
        self.ticker.tick();
        key(item, cost.dispatch_id, 0, self.seq);
        CostFacts::of(&cost).encode(item);
        self.seq += 1;
        Ok(true)
    }
}

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
        key(item, record.dispatch_id, 1, self.seq);
        encode_record(&record, &mut self.names.borrow_mut(), item);
        self.seq += 1;
        Ok(true)
    }
}
