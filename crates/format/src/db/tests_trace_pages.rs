//! A stored process's tracing records are read a page at a time (issue 49): from their rows, each
//! page holds at most [`TRACE_PAGE_ROWS`] rows of a table, found by one range of row ids (the
//! primary key, not a scan of the table per page); from their blocks, a block at a time; and the
//! pages together give every record as written.

use super::trace_order::{own_trace_rows, TRACE_PAGE_ROWS};
use super::*;
use crate::api::{ApiDomain, ApiRecord};
use crate::api_args::{ApiArg, ApiArgs};
use crate::markers::{MarkerKind, MarkerRecord};
use crate::records::*;
use crate::run::{RunData, TraceCursor, TraceSource};
use crate::testdata::*;
use rusqlite::Connection;
use std::borrow::Cow;

/// More than two pages of API calls (each with arguments, some without) and of markers (ranges
/// and marks interleaved with the calls).
fn traced_records(pid: u32) -> Vec<Record> {
    let mut records = vec![Record::Process(process(pid))];
    let calls = 2 * TRACE_PAGE_ROWS as u64 + 100;
    for id in 1..=calls {
        let args = (0..(id % 4) as u32)
            .map(|position| ApiArg {
                position,
                ty: "int".into(),
                name: format!("a{position}"),
                value: format!("{}", id * 10 + u64::from(position)),
            })
            .collect::<Vec<_>>();
        records.push(Record::Api(ApiRecord {
            correlation_id: id,
            parent_id: 0,
            domain: if id % 2 == 0 {
                ApiDomain::Runtime
            } else {
                ApiDomain::Driver
            },
            function: Cow::Owned(format!("cuCall{}", id % 7)),
            pid,
            tid: 4,
            start_ns: id * 100,
            end_ns: id * 100 + 50,
            args: match args.is_empty() {
                true => ApiArgs::None,
                false => ApiArgs::Read(args),
            },
        }));
        let kind = match id % 3 {
            0 => MarkerKind::Mark,
            _ => MarkerKind::PushPop,
        };
        let end = if kind == MarkerKind::Mark {
            id * 100
        } else {
            id * 100 + 5
        };
        let span = (id * 100, end);
        let marker = MarkerRecord {
            pid,
            ..marker(id, kind, &format!("m{id}"), 4, span)
        };
        records.push(Record::Marker(marker));
    }
    records
}

fn written(dir: &std::path::Path, name: &str, records: &[Record]) -> std::path::PathBuf {
    let path = dir.join(name);
    let writer = DbWriter::create(&path, || {}).unwrap();
    for record in records {
        writer.send(record.clone());
    }
    writer.finish().unwrap();
    path
}

/// Every page `next` gives, none over `most` records.
fn pages<T>(most: usize, mut next: impl FnMut(&mut TraceCursor) -> Vec<T>) -> Vec<Vec<T>> {
    let mut at = TraceCursor::default();
    let mut pages = Vec::new();
    loop {
        let page = next(&mut at);
        if page.is_empty() {
            return pages;
        }
        assert!(page.len() <= most, "a page of {} records", page.len());
        pages.push(page);
    }
}

fn stored(run: &RunData, index: usize) -> &dyn TraceSource {
    run.processes[index]
        .stored
        .as_ref()
        .unwrap()
        .0
        .traces()
        .unwrap()
}

#[test]
fn tracing_records_are_read_a_page_at_a_time_and_every_one_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let one = traced_records(3);
    let two: Vec<Record> = one.iter().cloned().chain(traced_records(5)).collect();
    let expected = RunData::from_records(two.clone());
    // One process alone in its file, and two in one file (each page filtered by process); each
    // read from its trace blocks, and from its rows (the blocks removed).
    for (file, processes) in [("one.db", &one), ("two.db", &two)] {
        let written = written(dir.path(), file, processes);
        let rows = super::tests_trace_blocks::without_trace_blocks(&written);
        for path in [written, rows] {
            let run = open_databases(&[path]).unwrap();
            for (index, process) in run.processes.iter().enumerate() {
                assert!(process.api_calls.is_empty() && process.markers.is_empty());
                let source = stored(&run, index);
                let calls = pages(TRACE_PAGE_ROWS as usize, |at| {
                    source.api_calls_after(at, true, None).unwrap()
                });
                assert_eq!(calls.len(), 3);
                let calls: Vec<ApiRecord> = calls.into_iter().flatten().collect();
                assert_eq!(calls, expected.processes[index].api_calls);
                // Ranges and marks: a page of each table at most.
                let markers = pages(2 * TRACE_PAGE_ROWS as usize, |at| {
                    source.markers_after(at).unwrap()
                });
                assert!(markers.len() >= 2);
                let markers: Vec<_> = markers.into_iter().flatten().collect();
                assert_eq!(markers, expected.processes[index].markers);
                // The iterators the writers use give the same.
                let each: Vec<ApiRecord> = (process.each_api_call())
                    .map(|c| c.unwrap().into_owned())
                    .collect();
                assert_eq!(each, expected.processes[index].api_calls);
                // One domain's calls with their arguments: the other's are not read.
                for domain in [ApiDomain::Runtime, ApiDomain::Driver] {
                    let of: Vec<ApiRecord> = (process.each_api_call_of(domain))
                        .map(|c| c.unwrap().into_owned())
                        .collect();
                    let want: Vec<&ApiRecord> = (expected.processes[index].api_calls.iter())
                        .filter(|c| c.domain == domain)
                        .collect();
                    assert_eq!(of.iter().collect::<Vec<_>>(), want, "{domain:?}");
                }
            }
        }
    }
}

/// The query plan of `sql` (as a file's only process, or one of several), one line per step.
fn plan(conn: &Connection, sql: &str, alone: bool) -> Vec<String> {
    let sql = own_trace_rows(sql, alone);
    let mut statement = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let count = statement.parameter_count();
    let params: Vec<rusqlite::types::Value> = (0..count).map(|_| 0.into()).collect();
    statement
        .query_map(rusqlite::params_from_iter(params), |row| {
            row.get::<_, String>(3)
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn each_page_is_one_range_of_row_ids_and_no_table_is_scanned() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path(), "run.db", &traced_records(3));
    let conn = Connection::open(&path).unwrap();
    for (sql, table) in [
        (super::read_api::API_SQL, "rocpd_region"),
        (super::read_api::ARGS_SQL, "rocpd_arg"),
        (super::read_api::ARGS_OF_SQL, "rocpd_arg"),
        (super::read_markers::REGIONS_SQL, "rocpd_region"),
        (super::read_markers::SAMPLES_SQL, "rocpd_sample"),
    ] {
        for alone in [true, false] {
            let steps = plan(&conn, sql, alone);
            // The table's own name carries the file's uuid (`rocpd_region_<uuid>`).
            let first = steps.first().map(String::as_str).unwrap_or_default();
            assert!(
                first.starts_with(&format!("SEARCH {table}_"))
                    && first.ends_with(" USING INTEGER PRIMARY KEY (rowid>?)"),
                "{sql}: {steps:?}"
            );
            assert!(
                steps
                    .iter()
                    .all(|s| !s.starts_with("SCAN") && !s.contains("TEMP B-TREE")),
                "{sql}: {steps:?}"
            );
        }
    }
}
