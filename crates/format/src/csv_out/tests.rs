use super::*;
use crate::db::read_databases;
use crate::numbers::quoted;
use crate::output::{write_outputs, OutputFormat};
use crate::testdata::recorded_run;
use crate::{DbWriter, RecordSink};

/// The recorded run, through the database, into CSV; returns (dir, db path, csv paths).
fn csv_of_recorded_run() -> (tempfile::TempDir, PathBuf, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("1.db");
    let writer = DbWriter::create(&db, || {}).unwrap();
    for record in recorded_run(31) {
        writer.send(record);
    }
    writer.finish().unwrap();
    let run = read_databases(std::slice::from_ref(&db)).unwrap();
    let written = write_outputs(
        &run,
        &dir.path().join("out"),
        "host/31",
        &[OutputFormat::Csv],
    )
    .unwrap();
    (dir, db, written)
}

fn read_rows(path: &Path) -> (Vec<String>, Vec<csv::StringRecord>) {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    let rows = reader.records().collect::<Result<Vec<_>, _>>().unwrap();
    (header, rows)
}

#[test]
fn counter_collection_header_is_rocprofv3s_byte_for_byte() {
    let (_dir, _db, written) = csv_of_recorded_run();
    let text = std::fs::read_to_string(&written[0]).unwrap();
    assert!(
        written[0].ends_with("out/host/31_counter_collection.csv"),
        "{written:?}"
    );
    let header = text.lines().next().unwrap();
    assert_eq!(
        header,
        "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\",\"Grid_Size\",\
         \"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\
         \"Accum_VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\""
    );
    // Strings quoted, numbers bare, as rocprofv3's encoder writes them.
    let first_row = text.lines().nth(1).unwrap();
    assert_eq!(
        first_row,
        "101,1,\"Agent 0\",7,31,32,524288,11,\"saxpy(float*, float*, float)\",256,1536,8,16,0,0,\
         \"SQ_WAVES\",512.000000,6000,6050"
    );
}

#[test]
fn counter_collection_values_agree_with_the_database() {
    let (_dir, db, written) = csv_of_recorded_run();
    let (header, rows) = read_rows(&written[0]);
    assert_eq!(header.len(), 19);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let expected: Vec<(String, String, String, String, String, String)> = conn
        .prepare(
            r#"SELECT dispatch_id, kernel_name, counter_name, value, grid_size, "start" FROM kreplay_pass_counters ORDER BY id"#,
        )
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?.to_string(),
                r.get(1)?,
                r.get(2)?,
                format_counter_value(r.get(3)?),
                r.get::<_, i64>(4)?.to_string(),
                r.get::<_, i64>(5)?.to_string(),
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let actual: Vec<(String, String, String, String, String, String)> = rows
        .iter()
        .map(|row| {
            (
                row[column("Dispatch_Id")].to_string(),
                row[column("Kernel_Name")].to_string(),
                row[column("Counter_Name")].to_string(),
                row[column("Counter_Value")].to_string(),
                row[column("Grid_Size")].to_string(),
                row[column("Start_Timestamp")].to_string(),
            )
        })
        .collect();
    assert_eq!(
        actual.len(),
        6,
        "one row per (pass, counter); the trace-only dispatch has none"
    );
    assert_eq!(actual, expected);
    let values: Vec<&str> = actual.iter().map(|r| r.3.as_str()).collect();
    assert_eq!(
        values,
        [
            "512.000000",
            "262144.000000",
            "513.000000",
            "5.00000000e-01",
            "514.000000",
            "0.00000000e+00"
        ]
    );
}

#[test]
fn counter_values_print_like_rocprofv3() {
    assert_eq!(format_counter_value(262_144.0), "262144.000000");
    for value in [
        1.0,
        3.0e15,
        2f64.powi(53) + 2.0,
        2f64.powi(63) - 1024.0,
        2f64.powi(63),
        1e300,
        1.5,
    ] {
        assert_eq!(format_counter_value(value), format!("{value:.6}"));
    }
    assert_eq!(format_counter_value(1.0), "1.000000");
    assert_eq!(format_counter_value(0.25), "2.50000000e-01");
    assert_eq!(format_counter_value(0.0), "0.00000000e+00");
    assert_eq!(format_counter_value(-3.0), "-3.00000000e+00");
    assert_eq!(format_counter_value(1.5e-12), "1.50000000e-12");
    assert_eq!(format_counter_value(f64::NAN), "nan");
    assert_eq!(format_counter_value(f64::NEG_INFINITY), "-inf");
}

#[test]
fn trace_agent_and_cost_files_have_their_columns_and_rows() {
    let (_dir, _db, written) = csv_of_recorded_run();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "31_counter_collection.csv",
            "31_kernel_trace.csv",
            "31_agent_info.csv",
            "31_replay_cost.csv"
        ]
    );

    let (header, rows) = read_rows(&written[1]);
    assert_eq!(header, KERNEL_TRACE_COLUMNS);
    assert_eq!(
        rows.len(),
        5,
        "one row per pass, trace-only dispatch included"
    );
    assert_eq!(&rows[0][0], "KERNEL_DISPATCH");
    assert_eq!(&rows[0][19], "262144", "Grid_Size_X in work-items");
    assert_eq!(&rows[4][5], "3");

    let (header, rows) = read_rows(&written[2]);
    assert_eq!(header.len(), 53);
    assert_eq!(header, AGENT_INFO_COLUMNS);
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    assert_eq!(&rows[0][column("Cu_Count")], "132");
    assert_eq!(&rows[0][column("Name")], "GH100");
    assert_eq!(&rows[0][column("Product_Name")], "NVIDIA H200");
    assert_eq!(&rows[0][column("Vendor_Id")], "4318");
    assert_eq!(
        &rows[0][column("Location_Id")],
        ((0x1b << 8) as u64).to_string()
    );

    let (header, rows) = read_rows(&written[3]);
    assert_eq!(header, REPLAY_COST_COLUMNS);
    assert_eq!(rows.len(), 2, "one row per dispatch");
    assert_eq!(&rows[0][3], "replayed");
    assert_eq!(&rows[0][11], "10000;11000;12000");
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    assert_eq!(&rows[0][column("Timing_Execution_Ns")], "4000");
    assert_eq!(
        &rows[0][column("Total_Ns")],
        (1_000 + 2_000 + 33_000 + 3_000 + 4_000).to_string()
    );
    assert_eq!(&rows[1][3], "declined_graph_launch");
}

#[test]
fn a_failed_write_keeps_the_file_it_would_have_replaced() {
    let (dir, db, written) = csv_of_recorded_run();
    let trace = &written[1];
    std::fs::write(trace, "old trace\n").unwrap();
    // A folder where the trace's temporary file would go makes its write fail.
    let temp = trace.with_file_name(format!(".31_kernel_trace.csv.tmp-{}", std::process::id()));
    std::fs::create_dir(&temp).unwrap();
    let run = read_databases(&[db]).unwrap();
    let error = write_csv(&run, &dir.path().join("out"), "host/31")
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(&format!("cannot write {}: ", trace.display())),
        "{error}"
    );
    assert_eq!(std::fs::read_to_string(trace).unwrap(), "old trace\n");
    std::fs::remove_dir(&temp).unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(trace.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    let mut expected = written.clone();
    expected.sort();
    assert_eq!(files, expected, "no temporary file is left behind");
}

#[test]
fn quotes_inside_names_are_doubled() {
    assert_eq!(quoted(r#"f<"x">"#), r#""f<""x"">""#);
}
