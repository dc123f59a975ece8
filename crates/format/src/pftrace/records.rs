//! A process's replay costs and dispatch passes, keyed for the order by dispatch
//! ([`super::order`]), read as they are asked for: the events are made as the records are read,
//! with nothing kept between (issue 49: the records of a long run went through a temporary file
//! for a second read).

use super::order::BY_DISPATCH_KEY;
use crate::error::FormatError;
use crate::progress::Ticker;
use crate::records::{DispatchRecord, ReplayCost};
use crate::run::{ProcessRun, Records};
use std::borrow::Cow;
use std::io;

/// Key of the order by dispatch: dispatch id, cost (0) or record (1), place in the run.
pub(super) type DispatchKey = (u64, u8, u64);

/// [`DispatchKey`] as bytes, big-endian: compared as bytes, keys sort as the tuples do.
pub(super) fn key_bytes((dispatch_id, kind, seq): DispatchKey) -> [u8; BY_DISPATCH_KEY] {
    let mut key = [0u8; BY_DISPATCH_KEY];
    key[..8].copy_from_slice(&dispatch_id.to_be_bytes());
    key[8] = kind;
    key[9..].copy_from_slice(&seq.to_be_bytes());
    key
}

/// The key [`key_bytes`] wrote.
pub(super) fn key_of(key: &[u8; BY_DISPATCH_KEY]) -> DispatchKey {
    let u64_at = |at: usize| u64::from_be_bytes(key[at..at + 8].try_into().expect("8 bytes"));
    (u64_at(0), key[8], u64_at(9))
}

/// A process's costs or passes, each with its key (dispatch id, `kind`, place in the run).
pub(super) struct Keyed<'a, T: Clone> {
    records: Records<'a, T>,
    /// 0 for costs, 1 for passes: a dispatch's cost comes before its passes.
    kind: u8,
    ticker: &'a Ticker<'a>,
    seq: u64,
}

/// The replay costs of a process.
pub(super) fn costs<'a>(process: &'a ProcessRun, ticker: &'a Ticker<'a>) -> Keyed<'a, ReplayCost> {
    Keyed {
        records: process.each_cost(),
        kind: 0,
        ticker,
        seq: 0,
    }
}

/// The dispatch passes of a process.
pub(super) fn passes<'a>(
    process: &'a ProcessRun,
    ticker: &'a Ticker<'a>,
) -> Keyed<'a, DispatchRecord> {
    Keyed {
        records: process.each_dispatch(),
        kind: 1,
        ticker,
        seq: 0,
    }
}

impl<'a, T: Clone> Keyed<'a, T>
where
    Records<'a, T>: Iterator<Item = Result<Cow<'a, T>, FormatError>>,
{
    /// Hands the next record to `take`, which returns its dispatch id; its key, none after the
    /// last.
    pub(super) fn next_with(
        &mut self,
        take: impl FnOnce(Cow<'a, T>) -> u64,
    ) -> io::Result<Option<DispatchKey>> {
        let Some(record) = self.records.next() else {
            return Ok(None);
        };
        let record = record.map_err(io::Error::other)?;
        self.ticker.tick();
        let seq = self.seq;
        self.seq += 1;
        Ok(Some((take(record), self.kind, seq)))
    }
}
