use super::*;
use crate::records::{AgentInfo, DispatchRecord, KernelSymbol};
use crate::records::{CounterInfo, CounterSample, ProcessInfo};
use crate::run::ProcessRun;
use crate::section_values::ncu_unit;

#[test]
fn counter_units_read_as_nsight_compute_writes_them() {
    // (CUPTI's unit, metric) and Nsight Compute's unit for the same row, H200, 2026-12-01.
    for (unit, metric, ncu) in [
        (
            "percent",
            "sm__throughput.avg.pct_of_peak_sustained_elapsed",
            "%",
        ),
        ("nanosecond", "gpu__time_duration.sum", "ns"),
        ("gpc_cycle", "gpc__cycles_elapsed.max", "cycle"),
        ("dram_cycle", "dram__cycles_active.avg", "cycle"),
        (
            "gpc_cycle/second",
            "gpc__cycles_elapsed.avg.per_second",
            "hz",
        ),
        ("instruction", "smsp__inst_executed.sum", "inst"),
        (
            "instruction/gpc_cycle",
            "sm__inst_executed.avg.per_cycle_active",
            "inst/cycle",
        ),
        ("byte/second", "dram__bytes.sum.per_second", "byte/s"),
        (
            "branch_target",
            "smsp__sass_branch_targets_threads_divergent.avg",
            "branches",
        ),
        (
            "",
            "smsp__sass_average_branch_targets_threads_uniform.pct",
            "%",
        ),
        ("", "smsp__thread_inst_executed_per_inst_executed.ratio", ""),
        ("warp", "smsp__warps_active.avg.per_cycle_active", "warp"),
        ("lrc_sector", "lrc__ilc_input_sectors.sum", "sector"),
    ] {
        assert_eq!(ncu_unit(unit, metric), ncu, "{unit} {metric}");
    }
    // Per-cycle and per-second units keep their denominator (CUPTI's units on GH100).
    for (unit, ncu) in [
        ("byte/dram_cycle", "byte/cycle"),
        ("l2_sector/fbp_cycle", "sector/cycle"),
        ("gpc_cycle/instruction", "cycle/inst"),
        ("fbp_cycle/second", "hz"),
        ("instruction/second", "inst/s"),
        ("register/thread", "register/thread"),
    ] {
        assert_eq!(ncu_unit(unit, "m.sum"), ncu, "{unit}");
    }
}

fn process() -> ProcessRun {
    let mut p = ProcessRun::new(ProcessInfo {
        pid: 42,
        ppid: 1,
        hostname: "host".into(),
        command: vec!["/bin/app".into()],
        start_ns: 0,
        end_ns: 0,
        rank: None,
        size: None,
        cache_control: Default::default(),
        sections: Vec::new(),
        kernel_rename: false,
        mangled_kernels: false,
        truncate_kernels: false,
    });
    p.agents.push(AgentInfo {
        agent_id: 0,
        name: "NVIDIA H200".into(),
        chip: "GH100".into(),
        sm_count: 132,
        global_memory_bytes: 0,
        pci_location: String::new(),
        max_threads_per_sm: 2048,
        shared_memory_per_sm_bytes: 0,
    });
    p.kernels.push(KernelSymbol {
        kernel_id: 7,
        code_object_id: 0,
        mangled_name: "_Z1kv".into(),
        demangled_name: "k()".into(),
        registers: 32,
        static_shared_bytes: 1024,
        local_bytes: 0,
        param_bytes: 0,
    });
    p.counters.push(CounterInfo {
        name: "dram__bytes_read.sum".into(),
        metric: "dram__bytes_read.sum".into(),
        description: String::new(),
        unit: "byte".into(),
    });
    for (dispatch, pass, name, value) in [
        (1, 0, "dram__bytes_read.sum", 100.0),
        (1, 1, "gpu__time_duration.sum", 4.0),
        (2, 0, "dram__bytes_read.sum", 300.0),
        (2, 1, "gpu__time_duration.sum", 0.0),
    ] {
        p.dispatches.push(DispatchRecord {
            dispatch_id: dispatch,
            replay_pass: Some(pass),
            correlation_id: dispatch,
            agent_id: 0,
            stream_id: 3,
            pid: 42,
            tid: 42,
            kernel_id: 7,
            grid: [64, 2, 1],
            block: [256, 1, 1],
            dynamic_shared_bytes: 0,
            start_ns: 0,
            end_ns: 0,
            counters: vec![CounterSample {
                name: name.into(),
                value,
            }],
            ranges: Vec::new(),
        });
    }
    p
}

fn counter(name: &str) -> Box<Expr> {
    Box::new(Expr::Counter(name.into()))
}

fn section() -> SectionSpec {
    let row = |label: &str, value: Expr, unit: Option<&str>| SectionRow {
        label: label.into(),
        metric: label.into(),
        value,
        unit: unit.map(String::from),
    };
    SectionSpec {
        identifier: "Mem".into(),
        display_name: "Memory".into(),
        rows: vec![
            row(
                "DRAM Read",
                Expr::Counter("dram__bytes_read.sum".into()),
                None,
            ),
            row(
                "Bytes per ns",
                Expr::Binary {
                    op: BinaryOp::Div,
                    lhs: counter("dram__bytes_read.sum"),
                    rhs: counter("gpu__time_duration.sum"),
                },
                Some("byte/nsecond"),
            ),
            row(
                "Over integer 0",
                Expr::Binary {
                    op: BinaryOp::Div,
                    lhs: counter("dram__bytes_read.sum"),
                    rhs: Box::new(Expr::Constant {
                        value: 0.0,
                        integer: true,
                    }),
                },
                None,
            ),
            row(
                "Threads",
                Expr::Attribute(Attribute::ThreadCount),
                Some("thread"),
            ),
            row(
                "Registers",
                Expr::Attribute(Attribute::RegistersPerThread),
                Some("register/thread"),
            ),
            row("Peak", Expr::Unavailable("not a CUPTI metric".into()), None),
        ],
    }
}

#[test]
fn the_csv_has_one_line_per_dispatch_and_row_with_passes_merged() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = process();
    p.process.sections = vec![section()];
    let run = RunData { processes: vec![p] };
    let path = write_sections_csv(&run, dir.path(), "out").unwrap();
    assert!(path.ends_with("out_sections.csv"));
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], COLUMNS.map(|c| format!("\"{c}\"")).join(","));
    assert_eq!(lines.len(), 1 + 2 * 6);
    assert_eq!(
        lines[1],
        "\"0\",\"42\",\"app\",\"host\",\"k()\",\"\",\"3\",\"(256, 1, 1)\",\"(64, 2, 1)\",\"0\",\"9.0\",\"Memory\",\"DRAM Read\",\"byte\",\"100\""
    );
    assert!(
        lines[2].ends_with("\"Bytes per ns\",\"byte/nsecond\",\"25\""),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].ends_with("\"Over integer 0\",\"\",\"100\""),
        "{}",
        lines[3]
    );
    assert!(
        lines[4].ends_with("\"Threads\",\"thread\",\"32768\""),
        "{}",
        lines[4]
    );
    assert!(
        lines[5].ends_with("\"Registers\",\"register/thread\",\"32\""),
        "{}",
        lines[5]
    );
    assert!(lines[6].ends_with("\"Peak\",\"\",\"n/a\""), "{}", lines[6]);
    // The second dispatch: ID 1; a division by a measured 0 leaves the left-hand side, as
    // Nsight Compute's rule for integer divisors.
    assert!(lines[7].starts_with("\"1\","), "{}", lines[7]);
    assert!(
        lines[8].ends_with("\"Bytes per ns\",\"byte/nsecond\",\"300\""),
        "{}",
        lines[8]
    );
}

#[test]
fn the_csv_writes_a_counters_unit_as_nsight_compute_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = process();
    p.counters[0].unit = "percent".into();
    p.process.sections = vec![section()];
    let run = RunData { processes: vec![p] };
    let text =
        std::fs::read_to_string(write_sections_csv(&run, dir.path(), "out").unwrap()).unwrap();
    let line = text.lines().nth(1).unwrap();
    assert!(line.ends_with("\"DRAM Read\",\"%\",\"100\""), "{line}");
}

#[test]
fn the_summary_gives_min_max_and_average_per_kernel() {
    let mut p = process();
    p.process.sections = vec![section()];
    let run = RunData {
        processes: vec![p, process()],
    };
    // The second process was asked for no sections: nothing of it.
    let text = render_sections_summary(&run);
    assert_eq!(text.matches("Invocations").count(), 1, "{text}");
    assert!(
        text.contains("k() (64, 2, 1) x (256, 1, 1), Device 0, Invocations 2"),
        "{text}"
    );
    assert!(text.contains("Section: Memory"), "{text}");
    let dram = text.lines().find(|l| l.contains("DRAM Read")).unwrap();
    let cells: Vec<&str> = dram.split_whitespace().collect();
    assert_eq!(
        cells,
        ["DRAM", "Read", "byte", "100", "300", "200"],
        "{text}"
    );
    let peak = text.lines().find(|l| l.contains("Peak")).unwrap();
    assert_eq!(
        peak.split_whitespace().collect::<Vec<_>>(),
        ["Peak", "n/a", "n/a", "n/a"]
    );
}

#[test]
fn nan_as_zero_turns_a_non_number_into_zero_and_keeps_the_rest() {
    let p = process();
    let at = &dispatch_values(&p)[0];
    let zero = || {
        Box::new(Expr::Constant {
            value: 0.0,
            integer: false,
        })
    };
    let nan = Expr::Binary {
        op: BinaryOp::Div,
        lhs: zero(),
        rhs: zero(),
    };
    assert!(nan.eval(at).is_some_and(f64::is_nan));
    assert_eq!(Expr::NanAsZero(Box::new(nan)).eval(at), Some(0.0));
    let bytes = Expr::NanAsZero(counter("dram__bytes_read.sum"));
    assert_eq!(bytes.eval(at), Some(100.0));
    assert_eq!(Expr::NanAsZero(counter("missing.sum")).eval(at), None);
}

#[test]
fn occupancy_attributes_come_from_the_launch_kernel_and_device() {
    let p = process();
    let at = &dispatch_values(&p)[0];
    let value = |a: Attribute| Expr::Attribute(a).eval(at);
    // 256 threads of 32 registers on GH100: 8 blocks by registers and by warps, 100 %.
    assert_eq!(value(Attribute::OccupancyLimitRegisters), Some(8.0));
    assert_eq!(value(Attribute::OccupancyLimitWarps), Some(8.0));
    assert_eq!(value(Attribute::OccupancyLimitBlocks), Some(32.0));
    assert_eq!(value(Attribute::TheoreticalOccupancy), Some(100.0));
    assert_eq!(value(Attribute::TheoreticalWarpsPerSm), Some(64.0));
    // 128 blocks over 8 x 132 resident.
    assert_eq!(value(Attribute::WavesPerSm), Some(128.0 / 1056.0));
    assert_eq!(value(Attribute::SharedMemPerBlockDriver), Some(1024.0));
    assert!(Attribute::WavesPerSm.computable_on("GH100"));
    assert!(!Attribute::WavesPerSm.computable_on("AD102"));
    assert!(Attribute::GridSize.computable_on("AD102"));
}

#[test]
fn compute_capabilities_of_known_chips() {
    assert_eq!(chip_compute_capability("GH100"), Some((9, 0)));
    assert_eq!(chip_compute_capability("ad102"), Some((8, 9)));
    assert_eq!(chip_compute_capability("GA104"), Some((8, 6)));
    assert_eq!(chip_compute_capability("SIM"), None);
}
