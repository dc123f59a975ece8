use super::*;
use kreplay_format::*;

fn dispatch(id: u64, pass: Option<u32>, counters: &[(&str, f64)]) -> DispatchRecord {
    DispatchRecord {
        dispatch_id: id,
        replay_pass: pass,
        correlation_id: id,
        agent_id: 0,
        stream_id: 0,
        pid: 7,
        tid: 1,
        kernel_id: 1,
        grid: [1, 1, 1],
        block: [32, 1, 1],
        dynamic_shared_bytes: 0,
        start_ns: 0,
        end_ns: 1,
        counters: counters
            .iter()
            .map(|(n, v)| CounterSample {
                name: (*n).into(),
                value: *v,
            })
            .collect(),
        ranges: Vec::new(),
    }
}

fn run() -> RunData {
    let mut p = ProcessRun::new(ProcessInfo {
        pid: 7,
        ppid: 1,
        hostname: "h".into(),
        command: vec!["app".into()],
        start_ns: 0,
        end_ns: 0,
        rank: None,
        size: None,
        cache_control: kreplay_format::CacheControl::All,
        sections: Vec::new(),
        kernel_rename: false,
        mangled_kernels: false,
        truncate_kernels: false,
    });
    p.kernels.push(KernelSymbol {
        kernel_id: 1,
        code_object_id: 0,
        mangled_name: "scale".into(),
        demangled_name: "scale".into(),
        registers: 0,
        static_shared_bytes: 0,
        local_bytes: 0,
        param_bytes: 0,
    });
    for id in 1..=2 {
        p.dispatches.push(dispatch(
            id,
            Some(0),
            &[("w.sum", 4.0), ("c.max", id as f64)],
        ));
        p.dispatches.push(dispatch(id, Some(1), &[("w.sum", 4.0)]));
        p.costs.push(ReplayCost {
            dispatch_id: id,
            agent_id: 0,
            outcome: ReplayOutcome::Replayed,
            passes: 2,
            bytes_tracked: 2048,
            bytes_snapshotted: 2048,
            bytes_restored: 2048,
            staging: Staging::Device,
            drain_ns: 0,
            snapshot_ns: 1000,
            pass_ns: vec![2_000_000, 4_000_000],
            restore_ns: 500,
            timing_execution_ns: 0,
            cache: kreplay_format::CacheState::Flushed,
            sm_clock_mhz: [0, 0],
            memory_clock_mhz: [0, 0],
        });
    }
    p.warnings.push(Warning {
        message: "a graph launch that runs whole is neither replayed nor measured".into(),
    });
    p.warnings.push(Warning {
        message: "a graph launch that runs whole is neither replayed nor measured".into(),
    });
    RunData { processes: vec![p] }
}

#[test]
fn several_devices_get_a_line_each_and_one_device_none() {
    let single = run();
    assert!(!render(&RunData {
        processes: vec![single.processes[0].clone()]
    })
    .contains("per device"));
    let mut data = run();
    let mut second = data.processes[0].clone();
    second.process.pid = 8;
    second.process.rank = Some("1".into());
    for d in &mut second.dispatches {
        d.agent_id = 1;
    }
    for c in &mut second.costs {
        c.agent_id = 1;
        c.outcome = ReplayOutcome::DeclinedCollective;
    }
    second.agents.push(AgentInfo {
        agent_id: 1,
        name: "NVIDIA H200".into(),
        chip: "GH100".into(),
        sm_count: 132,
        global_memory_bytes: 0,
        pci_location: String::new(),
        max_threads_per_sm: 2048,
        shared_memory_per_sm_bytes: 0,
    });
    data.processes.push(second);
    let text = render(&data);
    assert!(text.contains("kreplay: per device:"), "{text}");
    assert!(
        text.contains("  process 7, GPU 0: 2 dispatch(es): 2 replayed"),
        "{text}"
    );
    assert!(
        text.contains(
            "  process 8 (rank 1), GPU 1 (NVIDIA H200, GH100): 2 dispatch(es): 2 not replayed: collective (NCCL/NVSHMEM) kernel"
        ),
        "{text}"
    );
}

#[test]
fn per_kernel_per_pass_counters_and_costs() {
    let text = render(&run());
    assert!(text.contains("2 dispatch(es) of 1 kernel(s)"), "{text}");
    // pass 0: sum of w over 2 dispatches, max of c.
    assert!(text.contains("   0  w.sum=8  c.max=2"), "{text}");
    assert!(text.contains("   1  w.sum=8"), "{text}");
    assert!(text.contains("2 replayed"), "{text}");
    assert!(text.contains("4.0 KiB snapshotted"), "{text}");
    assert!(text.contains("pass 0 2.000 ms, pass 1 4.000 ms"), "{text}");
    assert!(!text.contains("timing executions"), "none ran: {text}");
    let mut timed = run();
    timed.processes[0].costs[0].timing_execution_ns = 1_500_000;
    let text_timed = render(&timed);
    assert!(
        text_timed.contains(
            "4.0 KiB restored (0.001 ms), timing executions 1.500 ms; mean time per pass"
        ),
        "{text_timed}"
    );
    assert!(
        text.contains("caches (--cache-control all): 2 dispatch(es) measured from a flushed L2, 0 with the caches as the work before left them; clocks not read"),
        "{text}"
    );
    // Two identical warnings count once, and are not repeated (the tool printed them).
    assert!(text.contains("1 distinct warning(s) recorded"), "{text}");
    assert!(
        !text.contains("a graph launch that runs whole is neither replayed nor measured"),
        "{text}"
    );
}

#[test]
fn the_clocks_seen_are_one_range_over_the_dispatches_that_read_them() {
    let mut data = run();
    let costs = &mut data.processes[0].costs;
    costs[0].sm_clock_mhz = [1755, 1980];
    costs[0].memory_clock_mhz = [3201, 3201];
    costs[1].cache = CacheState::AsLeft;
    let text = render(&data);
    assert!(
        text.contains("1 dispatch(es) measured from a flushed L2, 1 with the caches as the work before left them; clocks seen: SM 1755-1980 MHz, memory 3201 MHz"),
        "{text}"
    );
}

#[test]
fn an_alias_is_combined_by_the_metric_it_stands_for() {
    let mut data = run();
    let process = &mut data.processes[0];
    process.counters.push(CounterInfo {
        name: "OccupancyPercent".into(),
        metric: "sm__warps_active.avg.pct_of_peak_sustained_active".into(),
        description: String::new(),
        unit: String::new(),
    });
    for (dispatch, value) in process.dispatches.iter_mut().zip([40.0, 0.0, 60.0, 0.0]) {
        if dispatch.replay_pass == Some(0) {
            dispatch.counters.push(CounterSample {
                name: "OccupancyPercent".into(),
                value,
            });
        }
    }
    let text = render(&data);
    // Percentages of two dispatches average (50), they do not add up (100).
    assert!(text.contains("OccupancyPercent=50"), "{text}");
}

#[test]
fn values_and_sizes_format_compactly() {
    assert_eq!(format_value(262144.0), "262144");
    assert_eq!(format_value(0.5), "0.500");
    assert_eq!(format_bytes(512), "512 B");
    assert_eq!(format_bytes(3 * 1024 * 1024), "3.0 MiB");
    assert_eq!(combine("x.avg", &[1.0, 3.0]), 2.0);
    assert_eq!(combine("dram__bytes.sum.per_second", &[1.0, 3.0]), 2.0);
    assert_eq!(combine("x.sum", &[1.0, 3.0]), 4.0);
}
