//! API calls in the database: rocpd's `regions` view shows them as rocprofv3 writes HIP API
//! calls (category, function name, correlation id shared with the launch's dispatch), beside
//! markers without mixing with them, and they read back as written, in the order recorded.

use super::*;
use crate::api::{ApiDomain, ApiRecord};
use crate::records::*;
use crate::run::RunData;
use crate::testdata::*;
use rusqlite::Connection;
use std::borrow::Cow;

fn call(
    id: u64,
    parent: u64,
    domain: ApiDomain,
    function: &'static str,
    span: (u64, u64),
) -> Record {
    Record::Api(ApiRecord {
        correlation_id: id,
        parent_id: parent,
        domain,
        function: Cow::Borrowed(function),
        pid: 3,
        tid: 4,
        start_ns: span.0,
        end_ns: span.1,
        args: Default::default(),
    })
}

/// [`recorded_with_markers`] with a runtime launch whose driver launch it made, and the
/// dispatch 1 carrying the runtime call's correlation id.
fn recorded_with_api() -> (Vec<Record>, u64) {
    let mut records = recorded_with_markers();
    let correlation = records
        .iter()
        .find_map(|r| match r {
            Record::Dispatch(d) if d.dispatch_id == 1 => Some(d.correlation_id),
            _ => None,
        })
        .unwrap();
    records.extend([
        call(900_000, 0, ApiDomain::Runtime, "cudaMalloc", (5_000, 5_100)),
        call(
            900_001,
            900_000,
            ApiDomain::Driver,
            "cuMemAlloc_v2",
            (5_010, 5_090),
        ),
        call(
            correlation + 1000,
            correlation,
            ApiDomain::Driver,
            "cuLaunchKernel",
            (5_960, 5_990),
        ),
        call(
            correlation,
            0,
            ApiDomain::Runtime,
            "cudaLaunchKernel",
            (5_950, 6_000),
        ),
    ]);
    (records, correlation)
}

#[test]
fn api_calls_are_rocpd_regions_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let (records, correlation) = recorded_with_api();
    let writer = DbWriter::create(&path, || {}).unwrap();
    for record in &records {
        writer.send(record.clone());
    }
    writer.finish().unwrap();

    let conn = Connection::open(&path).unwrap();
    let regions: Vec<(String, String, i64, i64)> = conn
        .prepare(r#"SELECT category, name, tid, duration FROM regions WHERE category LIKE 'CUDA_%' ORDER BY "start""#)
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        regions,
        [
            ("CUDA_RUNTIME_API".into(), "cudaMalloc".into(), 4, 100),
            ("CUDA_DRIVER_API".into(), "cuMemAlloc_v2".into(), 4, 80),
            ("CUDA_RUNTIME_API".into(), "cudaLaunchKernel".into(), 4, 50),
            ("CUDA_DRIVER_API".into(), "cuLaunchKernel".into(), 4, 30),
        ]
    );
    // The launch's call and its dispatch share the correlation id.
    let linked: String = conn
        .query_row(
            "SELECT R.name FROM regions R JOIN kernels K ON K.correlation_id = R.corr_id WHERE K.dispatch_id = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(linked, "cudaLaunchKernel");
    let parent: i64 = conn
        .query_row(
            "SELECT E.parent_stack_id FROM rocpd_region R JOIN rocpd_event E ON E.id = R.event_id JOIN rocpd_string N ON N.id = R.name_id WHERE N.string = 'cuLaunchKernel'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(parent as u64, correlation);

    let read = read_databases(std::slice::from_ref(&path)).unwrap();
    let expected = RunData::from_records(records);
    assert_eq!(read.processes[0].api_calls, expected.processes[0].api_calls);
    assert_eq!(read.processes[0].markers, expected.processes[0].markers);

    // A merged file keeps them.
    let merged = dir.path().join("merged.db");
    write_rocpd(&expected, &merged).unwrap();
    let back = read_databases(&[merged]).unwrap();
    assert_eq!(back.processes[0].api_calls, expected.processes[0].api_calls);
}

#[test]
fn api_calls_read_back_in_the_order_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.db");
    let writer = DbWriter::create(&path, || {}).unwrap();
    writer.send(Record::Process(process(3)));
    for id in 1..=4500u64 {
        let domain = if id % 2 == 0 {
            ApiDomain::Driver
        } else {
            ApiDomain::Runtime
        };
        writer.send(call(
            id,
            0,
            domain,
            "cudaStreamSynchronize",
            (id * 10, id * 10 + 5),
        ));
    }
    writer.finish().unwrap();
    let read = read_databases(std::slice::from_ref(&path)).unwrap();
    let ids: Vec<u64> = read.processes[0]
        .api_calls
        .iter()
        .map(|c| c.correlation_id)
        .collect();
    assert_eq!(ids, (1..=4500).collect::<Vec<_>>());
}

/// A call with more arguments than one insert statement takes (`db::api` inserts them a few a
/// statement) reads back with every argument, in position order, ids in that order.
#[test]
fn many_arguments_read_back_in_position_order() {
    use crate::api_args::{ApiArg, ApiArgs};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("args.db");
    let args: Vec<ApiArg> = (0..19u32)
        .map(|position| ApiArg {
            position,
            ty: "int".into(),
            name: format!("a{position}"),
            value: (position * 7).to_string(),
        })
        .collect();
    let Record::Api(mut with_args) = call(1, 0, ApiDomain::Runtime, "f", (10, 20)) else {
        unreachable!()
    };
    with_args.args = ApiArgs::Read(args.clone());
    let writer = DbWriter::create(&path, || {}).unwrap();
    writer.send(Record::Process(process(3)));
    writer.send(Record::Api(with_args));
    writer.send(call(2, 0, ApiDomain::Runtime, "g", (30, 40)));
    writer.finish().unwrap();
    let read = read_databases(std::slice::from_ref(&path)).unwrap();
    assert_eq!(read.processes[0].api_calls[0].args, ApiArgs::Read(args));
    assert_eq!(read.processes[0].api_calls.len(), 2);
    let conn = Connection::open(&path).unwrap();
    let positions: Vec<i64> = conn
        .prepare("SELECT position FROM rocpd_arg ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(positions, (0..19).collect::<Vec<_>>());
}
