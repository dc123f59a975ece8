//! Records read by ranges of row ids on several threads (`run::ranges`): handed over in the
//! ranges' order, empty ranges skipped, a reader that panicked replaced, an error the end.

use super::*;
use crate::testdata::process;
use std::ops::RangeInclusive;

/// Passes whose ids are their row ids, every row id but multiples of 3 present; a range holding
/// `panics_at` panics on a reading thread, one holding `fails_at` is an error.
#[derive(Debug)]
struct Fake {
    last: i64,
    width: i64,
    panics_at: Option<i64>,
    fails_at: Option<i64>,
}

impl RecordSource for Fake {
    fn dispatches_after(&self, _: i64) -> Result<Page<DispatchRecord>, FormatError> {
        unreachable!("read by ranges")
    }
    fn costs_after(&self, _: i64) -> Result<Page<ReplayCost>, FormatError> {
        Ok((Vec::new(), 0))
    }
    fn counts(&self) -> (usize, usize) {
        (0, 0)
    }
    fn id_ranges(&self, kind: Stored) -> Option<IdRanges> {
        (kind == Stored::Passes).then_some(IdRanges {
            first: 1,
            last: self.last,
            width: self.width,
        })
    }
    fn dispatches_in(
        &self,
        ids: RangeInclusive<i64>,
        _reader: usize,
        _last: bool,
    ) -> Result<Vec<DispatchRecord>, FormatError> {
        let on_thread = std::thread::current().name() == Some("kreplay-read");
        if on_thread && self.panics_at.is_some_and(|id| ids.contains(&id)) {
            panic!("a reader panics");
        }
        if self.fails_at.is_some_and(|id| ids.contains(&id)) {
            return Err(FormatError::UnknownFormat("fails".into()));
        }
        Ok(ids
            .filter(|id| id % 3 != 0)
            .map(|id| DispatchRecord {
                dispatch_id: id as u64,
                ..DispatchRecord::default()
            })
            .collect())
    }
}

fn read(fake: Fake) -> Vec<Result<u64, String>> {
    let mut run = ProcessRun::new(process(1));
    run.stored = Some(Source(std::sync::Arc::new(fake)));
    run.each_dispatch()
        .map(|d| d.map(|d| d.dispatch_id).map_err(|e| e.to_string()))
        .collect()
}

fn expected(last: i64) -> Vec<Result<u64, String>> {
    (1..=last)
        .filter(|id| id % 3 != 0)
        .map(|id| Ok(id as u64))
        .collect()
}

#[test]
fn ranges_read_by_several_threads_come_in_order_and_empty_ones_are_skipped() {
    for (last, width) in [
        (0, 4),
        (1, 1),
        (2, 1),
        (3, 3),
        (100, 1),
        (100, 7),
        (1000, 4096),
    ] {
        let fake = Fake {
            last,
            width,
            panics_at: None,
            fails_at: None,
        };
        assert_eq!(read(fake), expected(last), "ids to {last}, {width} a range");
    }
}

#[test]
fn a_reader_that_panicked_leaves_its_ranges_to_be_read_by_the_writer() {
    let fake = Fake {
        last: 100,
        width: 4,
        panics_at: Some(50),
        fails_at: None,
    };
    assert_eq!(read(fake), expected(100));
}

#[test]
fn an_error_ends_the_records() {
    let fake = Fake {
        last: 100,
        width: 4,
        panics_at: None,
        fails_at: Some(50),
    };
    let read = read(fake);
    let before: Vec<_> = expected(48);
    assert_eq!(read[..before.len()], before[..]);
    assert!(read[before.len()].is_err());
    assert_eq!(read.len(), before.len() + 1);
}
