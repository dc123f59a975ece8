use super::*;
use crate::records::*;
use crate::run::RunData;
use crate::stats::*;

fn symbol(kernel_id: u64, name: &str) -> Record {
    Record::KernelSymbol(KernelSymbol {
        kernel_id,
        code_object_id: 0,
        mangled_name: name.to_string(),
        demangled_name: name.to_string(),
        registers: 0,
        static_shared_bytes: 0,
        local_bytes: 0,
        param_bytes: 0,
    })
}

fn dispatch(id: u64, pass: Option<u32>, kernel_id: u64, start: u64, end: u64) -> Record {
    let mut d = crate::testdata::dispatch(7, id, pass, Vec::new());
    d.kernel_id = kernel_id;
    d.start_ns = start;
    d.end_ns = end;
    Record::Dispatch(d)
}

/// Kernel 1 ("a"): dispatches of 100, 300 and 200 ns, replayed in 2 passes (pass 1 slower);
/// kernel 2 ("b"): one dispatch of 400 ns without replay.
fn run() -> RunData {
    let mut records = vec![
        Record::Process(crate::testdata::process(7)),
        symbol(1, "a"),
        symbol(2, "b"),
    ];
    for (id, ns) in [(1u64, 100u64), (2, 300), (3, 200)] {
        // Pass 1 recorded first: the rule takes the lowest pass, not the first record.
        records.push(dispatch(id, Some(1), 1, 1_000 * id, 1_000 * id + ns + 7));
        records.push(dispatch(id, Some(0), 1, 1_000 * id, 1_000 * id + ns));
    }
    records.push(dispatch(9, None, 2, 50_000, 50_400));
    RunData::from_records(records)
}

#[test]
fn a_replayed_dispatch_counts_once_with_its_first_pass() {
    let stats = kernel_stats(&run(), None).unwrap();
    let kernels = stats.to_vec();
    let names: Vec<&str> = kernels.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a", "b"], "largest total first");
    let a = kernels[0].1;
    assert_eq!((a.count, a.sum, a.min, a.max), (3, 600, 100, 300));
    assert_eq!(a.mean(), 200.0);
    assert_eq!(a.stddev(), 100.0);
    assert_eq!(stats.total().count, 4);
    assert_eq!(stats.total().sum, 1_000);
    assert_eq!(kernels[1].1.stddev(), 0.0);
}

#[test]
fn stats_files_have_rocprofv3s_header_and_number_formats() {
    let dir = tempfile::tempdir().unwrap();
    let written = write_stats_csv(&run(), dir.path(), "host/7").unwrap();
    assert!(written[0].ends_with("host/7_kernel_stats.csv"));
    assert!(written[1].ends_with("host/7_domain_stats.csv"));
    let text = std::fs::read_to_string(&written[0]).unwrap();
    assert_eq!(
        text,
        "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\",\"MinNs\",\"MaxNs\",\"StdDev\"\n\
         \"a\",3,600,200.000000,60.00,100,300,100.000000\n\
         \"b\",1,400,400.000000,40.00,400,400,0.00000000e+00\n"
    );
    let domain = std::fs::read_to_string(&written[1]).unwrap();
    assert_eq!(
        domain.lines().nth(1).unwrap(),
        "\"KERNEL_DISPATCH\",4,1000,250.000000,100.00,100,400,129.099445"
    );
    assert!(write_stats_csv(&RunData::default(), dir.path(), "x")
        .unwrap()
        .is_empty());
}

#[test]
fn numbers_print_as_cxx_streams_and_fmt_print_them() {
    assert_eq!(csv_float(0.01), "1.00000000e-02");
    assert_eq!(csv_float(0.5), "0.500000");
    assert_eq!(csv_percentage(99.999), "100.00");
    assert_eq!(csv_percentage(0.5), "0.5000");
    assert_eq!(csv_percentage(0.001), "1.000e-03");
    assert_eq!(SummaryUnit::parse("USEC"), Some(SummaryUnit::Usec));
    assert_eq!(SummaryUnit::parse("min"), None);
}

#[test]
fn the_summary_table_is_rocprofv3s() {
    let stats = run_stats(&run(), None).unwrap();
    let text = render_summary(&stats, &[SummaryTable::Total], SummaryUnit::Nsec, "    ");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "");
    assert_eq!(lines[1], "    ROCPROFV3 SUMMARY:");
    assert_eq!(lines[2], "");
    assert_eq!(
        lines[3],
        format!(
            "    | {:^40} |     DOMAIN      |      CALLS      | DURATION (nsec) | AVERAGE (nsec)  | PERCENT (INC) |   MIN (nsec)    |   MAX (nsec)    |     STDDEV      |",
            "NAME"
        )
    );
    // Each column's dashes: its width plus the spaces either side.
    let divider: Vec<String> = [42, 17, 17, 17, 17, 15, 17, 17, 17]
        .iter()
        .map(|&n| "-".repeat(n))
        .collect();
    assert_eq!(lines[4], format!("    |{}|", divider.join("|")));
    assert_eq!(
        lines[5],
        format!(
            "    | {:<40} | KERNEL_DISPATCH | {:>15} | {:>15} | {:>15} | {:>13} | {:>15} | {:>15} | {:>15} |",
            "a", 3, 600, "2.000e+02", "60.000000", 100, 300, "1.000e+02"
        )
    );
    assert!(lines[6].starts_with("    | b "));
    assert_eq!(
        lines.len(),
        8,
        "blank, title, blank, header, divider, 2 rows, blank"
    );
    assert!(text.ends_with("|\n\n"));

    let usec = render_summary(
        &stats,
        &[SummaryTable::Domain, SummaryTable::Total],
        SummaryUnit::Usec,
        "",
    );
    assert!(usec.starts_with("\nROCPROFV3 KERNEL_DISPATCH SUMMARY:\n\n| "));
    assert!(usec.contains("\nROCPROFV3 SUMMARY:\n"));
    assert!(usec.contains(" DURATION (usec) "));
    let row = usec.lines().find(|l| l.starts_with("| a ")).unwrap();
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(
        cells[1..10],
        [
            "a",
            "KERNEL_DISPATCH",
            "3",
            "0.6",
            "2.000e-01",
            "60.000000",
            "0.1",
            "0.3",
            "1.000e-01"
        ]
    );
    assert_eq!(
        render_summary(&[], &[SummaryTable::Total], SummaryUnit::Nsec, ""),
        ""
    );
}

#[test]
fn a_long_kernel_name_widens_the_name_column() {
    let name = "k".repeat(50);
    let stats = [DomainStats {
        domain: KERNEL_DISPATCH_DOMAIN,
        stats: Names::in_memory(vec![(name.clone(), {
            let mut s = DurationStats::default();
            s.add(5);
            s
        })]),
    }];
    let text = render_summary(&stats, &[SummaryTable::Total], SummaryUnit::Nsec, "");
    assert!(
        text.contains(&format!("| {name} | KERNEL_DISPATCH |")),
        "{text}"
    );
    assert!(text.contains(&format!("|-{}-|", "-".repeat(50))), "{text}");
}

#[test]
fn the_summary_file_is_named_after_the_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let stats = run_stats(&run(), None).unwrap();
    let path = write_summary_file(
        &stats,
        &[SummaryTable::Total],
        SummaryUnit::Nsec,
        dir.path(),
        "out",
        "summary",
    )
    .unwrap();
    assert_eq!(path, dir.path().join("out_summary.txt"));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("\nROCPROFV3 SUMMARY:\n\n| "), "{text}");
}

#[test]
fn each_traced_domain_has_its_stats_file_and_tables_with_a_call_per_record() {
    let dir = tempfile::tempdir().unwrap();
    let run = RunData::from_records(crate::testdata::recorded_with_traces());
    let domains = run_stats(&run, None).unwrap();
    let p = &run.processes[0];
    let calls = |domain: &str| {
        domains
            .iter()
            .find(|d| d.domain == domain)
            .map_or(0, |d| d.stats.total().count as usize)
    };
    assert_eq!(calls(MARKER_API_DOMAIN), p.markers.len());
    assert_eq!(calls(MEMORY_COPY_DOMAIN), p.copies.len());
    assert_eq!(calls(MEMORY_ALLOCATION_DOMAIN), p.allocations.len());
    assert!(p.markers.len() + p.copies.len() + p.allocations.len() > 0);
    let written = write_stats_csv(&run, dir.path(), "out").unwrap();
    for (domain, file) in DOMAINS {
        let path = dir.path().join(format!("out{file}"));
        assert_eq!(path.exists(), calls(domain) > 0, "{domain}");
        assert_eq!(written.contains(&path), calls(domain) > 0, "{domain}");
    }
    let domain_csv = std::fs::read_to_string(dir.path().join("out_domain_stats.csv")).unwrap();
    assert_eq!(domain_csv.lines().count(), 1 + domains.len());
    let text = render_summary(&domains, &[SummaryTable::Domain], SummaryUnit::Nsec, "");
    for d in &domains {
        assert!(
            text.contains(&format!("ROCPROFV3 {} SUMMARY:", d.domain)),
            "{text}"
        );
    }
    let group = SummaryTable::Group(vec![MEMORY_COPY_DOMAIN, MEMORY_ALLOCATION_DOMAIN]);
    let text = render_summary(&domains, &[group], SummaryUnit::Nsec, "");
    assert!(
        text.contains("ROCPROFV3 MEMORY_COPY|MEMORY_ALLOCATION SUMMARY:"),
        "{text}"
    );
}

/// A traced run under `--kernel-rename` naming many ranges: every dispatch under a range of its
/// own step, and a marker per step, names repeating (steps counted modulo a few hundred).
fn many_names() -> RunData {
    let mut records = crate::testdata::recorded_with_traces();
    let marker = records.iter().find_map(|r| match r {
        Record::Marker(m) => Some(m.clone()),
        _ => None,
    });
    let dispatch = records.iter().find_map(|r| match r {
        Record::Dispatch(d) => Some(d.clone()),
        _ => None,
    });
    for r in &mut records {
        if let Record::Process(p) = r {
            p.kernel_rename = true;
        }
    }
    let (marker, dispatch) = (marker.unwrap(), dispatch.unwrap());
    for step in 0..600u64 {
        let start = 10_000_000 + step * 1_000;
        records.push(Record::Marker(crate::markers::MarkerRecord {
            id: 10_000 + step,
            message: format!("step {}", step % 250),
            start_ns: start,
            end_ns: start + (step * 37) % 500,
            ..marker.clone()
        }));
        records.push(Record::Dispatch(DispatchRecord {
            dispatch_id: 10_000 + step,
            correlation_id: 10_000 + step,
            replay_pass: None,
            ranges: vec!["outer".to_string(), format!("step {}", step % 300)],
            start_ns: start,
            end_ns: start + (step * 53) % 700,
            ..dispatch.clone()
        }));
        let functions = ["cudaLaunchKernel", "cudaMemcpy", "cuLaunchKernel"];
        records.push(Record::Api(crate::api::ApiRecord {
            correlation_id: 20_000 + step,
            parent_id: 0,
            domain: crate::api::ApiDomain::Runtime,
            function: std::borrow::Cow::Borrowed(functions[step as usize % 3]),
            pid: marker.pid,
            tid: marker.tid,
            start_ns: start,
            end_ns: start + step % 90,
            args: Default::default(),
        }));
    }
    RunData::from_records(records)
}

/// The stats files, every summary table and the JSON of `run`, with names spilled at a budget
/// of `budget` bytes.
fn stats_outputs(run: &RunData, budget: usize) -> Vec<(String, Vec<u8>)> {
    use crate::name_stats::TEST_TALLY_BUDGET;
    let before = TEST_TALLY_BUDGET.with(|b| b.replace(budget));
    let dir = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for path in write_stats_csv(run, dir.path(), "out").unwrap() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        outputs.push((name, std::fs::read(&path).unwrap()));
    }
    let domains = run_stats(run, Some(dir.path())).unwrap();
    let all_domains = DOMAINS.iter().map(|(d, _)| *d).collect();
    let tables = [
        SummaryTable::Domain,
        SummaryTable::Group(all_domains),
        SummaryTable::Total,
    ];
    for unit in [SummaryUnit::Nsec, SummaryUnit::Usec] {
        let text = render_summary(&domains, &tables, unit, "    ");
        outputs.push((format!("summary {unit:?}"), text.into_bytes()));
    }
    let formats = [crate::OutputFormat::Json];
    let written = crate::write_outputs(run, dir.path(), "out", &formats).unwrap();
    outputs.push(("json".to_string(), std::fs::read(&written[0]).unwrap()));
    TEST_TALLY_BUDGET.with(|b| b.set(before));
    outputs
}

#[test]
fn names_spilled_to_disk_give_the_same_files_and_tables_as_names_in_memory() {
    let run = many_names();
    let in_memory = stats_outputs(&run, usize::MAX);
    let names: Vec<&str> = in_memory.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names.len(),
        5 + 1 + 2 + 1,
        "5 stats files, domain stats, 2 summaries, JSON: {names:?}"
    );
    let file = |name: &str| {
        let (_, bytes) = in_memory.iter().find(|(n, _)| n == name).unwrap();
        String::from_utf8_lossy(bytes).to_string()
    };
    let markers = file("out_marker_api_stats.csv");
    assert!(markers.contains("\"step 249\""), "{markers}");
    let kernels = file("out_kernel_stats.csv");
    assert!(kernels.contains("\"step 299\""), "{kernels}");
    // Spilled every few names (many sort runs), and at every name.
    for budget in [2_000, 1] {
        let spilled = stats_outputs(&run, budget);
        assert_eq!(spilled.len(), in_memory.len());
        for ((name, bytes), (_, expected)) in spilled.iter().zip(&in_memory) {
            assert!(bytes == expected, "{name} differs at budget {budget}");
        }
    }
}
