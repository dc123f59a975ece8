use super::*;
use crate::db::write_rocpd;
use crate::files::{temp_path, write_file};
use std::io::{self, Write};

#[test]
fn every_file_written_ends_with_a_listed_suffix_and_every_suffix_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = RunData::from_records(crate::testdata::recorded_with_traces());
    run.processes[0].process.sections = vec![crate::sections_out::SectionSpec {
        identifier: "S".into(),
        display_name: "S".into(),
        rows: Vec::new(),
    }];
    run.processes[0].api_calls.push(crate::api::ApiRecord {
        correlation_id: 1,
        parent_id: 0,
        domain: crate::api::ApiDomain::Runtime,
        function: "cudaLaunchKernel".into(),
        pid: 3,
        tid: 4,
        start_ns: 1,
        end_ns: 2,
        args: Default::default(),
    });
    let mut written = write_outputs(&run, dir.path(), "out", &OutputFormat::ALL).unwrap();
    written.extend(crate::stats_out::write_stats_csv(&run, dir.path(), "out").unwrap());
    let mut seen: Vec<&str> = written
        .iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_str().unwrap();
            let tail = name.strip_prefix("out").unwrap();
            *suffix::ALL
                .iter()
                .find(|s| **s == tail)
                .unwrap_or_else(|| panic!("{name} is not in suffix::ALL"))
        })
        .collect();
    seen.sort();
    let mut all = suffix::ALL.to_vec();
    all.sort();
    assert_eq!(seen, all);
    assert_eq!(suffix::LONGEST, "_counter_collection.csv".len());
}

#[test]
fn formats_parse_case_insensitively_and_reject_others() {
    assert_eq!(
        "ROCPD".parse::<OutputFormat>().unwrap(),
        OutputFormat::Rocpd
    );
    assert_eq!("csv".parse::<OutputFormat>().unwrap(), OutputFormat::Csv);
    assert_eq!("Json".parse::<OutputFormat>().unwrap(), OutputFormat::Json);
    assert_eq!(
        "pftrace".parse::<OutputFormat>().unwrap(),
        OutputFormat::Pftrace
    );
    let error = "otf2".parse::<OutputFormat>().unwrap_err().to_string();
    assert!(
        error.contains("\"otf2\"") && error.contains("rocpd csv json pftrace"),
        "{error}"
    );
}

/// The files in `dir`, sorted.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_failing_writer_keeps_the_old_file_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.csv");
    std::fs::write(&path, "old contents\n").unwrap();
    let error = write_file(&path, |out| {
        // More than the write buffer holds, so that part of it reached the temporary file.
        out.write_all(&vec![b'x'; 64 * 1024])?;
        Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
    })
    .unwrap_err()
    .to_string();
    assert_eq!(error, format!("cannot write {}: disk full", path.display()));
    assert_eq!(std::fs::read(&path).unwrap(), b"old contents\n");
    assert_eq!(files_in(dir.path()), ["out.csv"]);
}

#[test]
fn a_complete_write_replaces_the_file_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.csv");
    std::fs::write(&path, "old contents, longer than the new\n").unwrap();
    write_file(&path, |out| out.write_all(b"new\n")).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"new\n");
    assert_eq!(files_in(dir.path()), ["out.csv"]);
}

#[test]
fn the_temporary_file_is_hidden_next_to_the_destination() {
    let temp = temp_path(Path::new("/data/run/out_results.json")).unwrap();
    assert_eq!(
        temp,
        PathBuf::from(format!(
            "/data/run/.out_results.json.tmp-{}",
            std::process::id()
        ))
    );
    assert!(temp_path(Path::new("/")).is_err());
}

#[test]
fn a_failed_rewrite_in_place_keeps_the_input_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out_results.db");
    let run = RunData::from_records(crate::testdata::recorded_run(7));
    write_rocpd(&run, &path).unwrap();
    let before = crate::db::read_databases(std::slice::from_ref(&path)).unwrap();
    assert!(!before.processes.is_empty());
    // A folder where the temporary file would go makes the rewrite fail.
    let temp = temp_path(&path).unwrap();
    std::fs::create_dir(&temp).unwrap();
    assert!(write_rocpd(&before, &path).is_err());
    assert_eq!(
        crate::db::read_databases(std::slice::from_ref(&path)).unwrap(),
        before
    );
    // Once the way is clear, rewriting in place gives the same run and leaves no other file.
    std::fs::remove_dir(&temp).unwrap();
    write_rocpd(&before, &path).unwrap();
    assert_eq!(crate::db::read_databases(&[path]).unwrap(), before);
    assert_eq!(files_in(dir.path()), ["out_results.db"]);
}
