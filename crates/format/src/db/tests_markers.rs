//! Marker ranges and marks in the database: rocpd's `regions` and `samples` views show them as
//! rocprofv3 writes ROCTx records, they read back as written, and the range stack of a dispatch
//! travels in its row.

use super::*;
use crate::records::*;
use crate::run::RunData;
use crate::testdata::*;
use rusqlite::Connection;

#[test]
fn markers_are_rocpd_regions_and_samples_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let records = recorded_with_markers();
    let writer = DbWriter::create(&path, || {}).unwrap();
    for record in &records {
        writer.send(record.clone());
    }
    writer.finish().unwrap();

    let conn = Connection::open(&path).unwrap();
    let regions: Vec<(String, String, i64, i64, String)> = conn
        .prepare(r#"SELECT category, name, tid, duration, json_extract(extdata, '$.message') FROM regions ORDER BY "start""#)
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        regions,
        [
            (
                "MARKER_CORE_RANGE_API".into(),
                "nvtxDomainRangeStartEx".into(),
                9,
                3_000,
                "load".into()
            ),
            (
                "MARKER_CORE_RANGE_API".into(),
                "nvtxRangePushA".into(),
                4,
                1_200,
                "step 0".into()
            ),
            (
                "MARKER_CORE_RANGE_API".into(),
                "nvtxRangePushA".into(),
                4,
                600,
                "forward".into()
            ),
        ]
    );
    let (domain, category): (String, i64) = conn
        .query_row(
            "SELECT json_extract(extdata, '$.domain'), json_extract(extdata, '$.category') FROM regions WHERE tid = 9",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((domain.as_str(), category), ("io", 3));
    let mark: (String, i64, String) = conn
        .query_row(
            "SELECT name, timestamp, json_extract(extdata, '$.message') FROM samples",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        mark,
        ("MARKER_CORE_RANGE_API".into(), 6_600, "checkpoint".into())
    );
    let count: i64 = conn
        .query_row("SELECT COUNT(*) FROM regions_and_samples", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count, 4);
    // The dispatch launched inside "step 0" / "forward" has the innermost range as its region.
    let region: String = conn
        .query_row(
            "SELECT region FROM kernels WHERE dispatch_id = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(region, "forward");

    let read = read_databases(std::slice::from_ref(&path)).unwrap();
    let expected = RunData::from_records(records);
    assert_eq!(read.processes[0].markers, expected.processes[0].markers);
    let first = read.processes[0]
        .dispatches
        .iter()
        .find(|d| d.dispatch_id == 1)
        .unwrap();
    assert_eq!(first.ranges, ["step 0", "forward"]);
    assert!(read.processes[0]
        .dispatches
        .iter()
        .filter(|d| d.dispatch_id != 1)
        .all(|d| d.ranges.is_empty()));

    // A merged file of two processes keeps each one's markers.
    let mut two = expected.clone();
    let mut other = RunData::from_records(recorded_with_markers().into_iter().map(|r| match r {
        Record::Process(_) => Record::Process(process(5)),
        other => other,
    }));
    two.processes.append(&mut other.processes);
    let merged = dir.path().join("merged.db");
    write_rocpd(&two, &merged).unwrap();
    let back = read_databases(&[merged]).unwrap();
    assert_eq!(back.processes.len(), 2);
    assert!(back.processes.iter().all(|p| p.markers.len() == 4));
}

#[test]
fn markers_read_back_page_after_page_in_the_order_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.db");
    let writer = DbWriter::create(&path, || {}).unwrap();
    writer.send(Record::Process(process(3)));
    // More than a page (4096), ranges and marks interleaved.
    for id in 1..=4500u64 {
        let kind = if id % 3 == 0 {
            crate::markers::MarkerKind::Mark
        } else {
            crate::markers::MarkerKind::PushPop
        };
        let end = if id % 3 == 0 { id * 10 } else { id * 10 + 5 };
        writer.send(Record::Marker(marker(
            id,
            kind,
            &format!("m{id}"),
            4,
            (id * 10, end),
        )));
    }
    writer.finish().unwrap();
    let read = read_databases(std::slice::from_ref(&path)).unwrap();
    let ids: Vec<u64> = read.processes[0].markers.iter().map(|m| m.id).collect();
    assert_eq!(ids, (1..=4500).collect::<Vec<_>>());
}
