//! A process's replay costs and dispatch passes as items keyed for the order by dispatch
//! ([`super::order`]), read as they are asked for: the events are made as the records are read,
//! with nothing kept between (issue 49: the records of a long run went through a temporary file
//! for a second read).

use super::order::BY_DISPATCH_KEY;
use super::spilled::{encode_record, CostFacts, Names};
use crate::error::FormatError;
use crate::progress::Ticker;
use crate::records::{DispatchRecord, ReplayCost};
use crate::run::{ProcessRun, Records};
use std::borrow::Cow;
use std::cell::RefCell;
use std::io;

/// Items in order, each its key then its payload.
pub(super) trait Items {
    /// Sets `item` to the next item (key and payload); false after the last.
    fn next_into(&mut self, item: &mut Vec<u8>) -> io::Result<bool>;
}

/// Appends a record's payload to an item; returns its dispatch id.
type Encode<'a, T> = Box<dyn FnMut(&T, &mut Vec<u8>) -> u64 + 'a>;

/// A process's costs or passes, each as an item: its key (dispatch id, `kind`, place in the run)
/// and its payload, which `encode` appends (returning the record's dispatch id).
pub(super) struct Keyed<'a, T: Clone> {
    records: Records<'a, T>,
    /// 0 for costs, 1 for passes: a dispatch's cost comes before its passes.
    kind: u8,
    encode: Encode<'a, T>,
    ticker: &'a Ticker<'a>,
    seq: u64,
}

/// The replay costs of a process ([`CostFacts::encode`]).
pub(super) fn costs<'a>(process: &'a ProcessRun, ticker: &'a Ticker<'a>) -> Keyed<'a, ReplayCost> {
    Keyed {
        records: process.each_cost(),
        kind: 0,
        encode: Box::new(|cost, item| {
            CostFacts::of(cost).encode(item);
            cost.dispatch_id
        }),
        ticker,
        seq: 0,
    }
}

/// The dispatch passes of a process ([`encode_record`]), counter names numbered in `names` as
/// met.
pub(super) fn passes<'a>(
    process: &'a ProcessRun,
    names: &'a RefCell<Names>,
    ticker: &'a Ticker<'a>,
) -> Keyed<'a, DispatchRecord> {
    Keyed {
        records: process.each_dispatch(),
        kind: 1,
        encode: Box::new(|record, item| {
            encode_record(record, &mut names.borrow_mut(), item);
            record.dispatch_id
        }),
        ticker,
        seq: 0,
    }
}

impl<'a, T: Clone> Items for Keyed<'a, T>
where
    Records<'a, T>: Iterator<Item = Result<Cow<'a, T>, FormatError>>,
{
    fn next_into(&mut self, item: &mut Vec<u8>) -> io::Result<bool> {
        let Some(record) = self.records.next() else {
            return Ok(false);
        };
        let record = record.map_err(io::Error::other)?;
        self.ticker.tick();
        item.clear();
        item.extend_from_slice(&[0; 8]);
        item.push(self.kind);
        item.extend_from_slice(&self.seq.to_be_bytes());
        debug_assert_eq!(item.len(), BY_DISPATCH_KEY);
        let dispatch_id = (self.encode)(&record, item);
        item[..8].copy_from_slice(&dispatch_id.to_be_bytes());
        self.seq += 1;
        Ok(true)
    }
}
