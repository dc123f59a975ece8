//! Which groups a dispatch gets and which dispatches are profiled: collectable groups,
//! rotation, filters, iteration ranges, kernel names; untracked memory kinds.

use super::*;

#[test]
fn backend_may_collect_fewer_groups() {
    let h = harness(3, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    backend.collectable = Some(2);
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.count(&Op::Restore), 1);
    assert_eq!(h.sink.dispatches().len(), 2);
}

#[test]
fn rotation_switches_groups_by_dispatch_count() {
    let h = harness(3, InProcessMode::Rotation { interval: 2 });
    let mut backend = MockBackend::new();
    for _ in 0..7 {
        launch(&h, &mut backend, LaunchKind::Kernel);
    }
    let planned: Vec<Vec<Option<usize>>> = backend
        .ops
        .iter()
        .filter_map(|o| match o {
            Op::Plan(g) => Some(g.clone()),
            _ => None,
        })
        .collect();
    let expected: Vec<Vec<Option<usize>>> = [0, 0, 1, 1, 2, 2, 0]
        .iter()
        .map(|g| vec![Some(*g)])
        .collect();
    assert_eq!(
        planned, expected,
        "group i for 2 dispatches, then i+1, wrapping"
    );
    assert_eq!(backend.count(&Op::Snapshot(Staging::Device)), 0);
    let dispatches = h.sink.dispatches();
    assert_eq!(dispatches.len(), 7, "one record per dispatch");
    assert!(dispatches.iter().all(|d| d.replay_pass.is_none()));
}

#[test]
fn filtered_dispatches_are_traced_only_with_kernel_trace() {
    let filter = KernelFilter {
        exclude_regex: Some("kernel".into()),
        ..KernelFilter::default()
    };
    let h = harness_with(
        ToolConfig {
            filter: filter.clone(),
            ..config(2, InProcessMode::KernelReplay)
        },
        None,
    );
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.ops, vec![Op::Execute]);
    assert!(h.sink.dispatches().is_empty());

    let h = harness_with(
        ToolConfig {
            filter,
            kernel_trace: true,
            ..config(2, InProcessMode::KernelReplay)
        },
        None,
    );
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        backend.ops,
        vec![
            Op::Plan(vec![None]),
            Op::Start(0, 1),
            Op::Execute,
            Op::Stop(1)
        ]
    );
    let dispatches = h.sink.dispatches();
    assert_eq!(dispatches.len(), 1);
    assert!(dispatches[0].counters.is_empty());
    assert_eq!(h.sink.costs()[0].outcome, ReplayOutcome::Filtered);
}

#[test]
fn iteration_range_selects_occurrences_of_each_kernel() {
    let h = harness_with(
        ToolConfig {
            filter: KernelFilter {
                iteration_range: Some("[2-3]".into()),
                ..KernelFilter::default()
            },
            ..config(2, InProcessMode::KernelReplay)
        },
        None,
    );
    let mut backend = MockBackend::new();
    for _ in 0..4 {
        launch(&h, &mut backend, LaunchKind::Kernel);
    }
    let ids: Vec<u64> = h.sink.dispatches().iter().map(|d| d.dispatch_id).collect();
    assert_eq!(ids, vec![2, 2, 3, 3]);
    assert_eq!(backend.value, 4);
}

#[test]
fn registered_demangled_names_are_what_filters_match() {
    let h = harness_with(
        ToolConfig {
            filter: KernelFilter {
                include_regex: Some(r"^kernel\(\)$".into()),
                ..KernelFilter::default()
            },
            ..config(2, InProcessMode::KernelReplay)
        },
        None,
    );
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert!(
        h.sink.dispatches().is_empty(),
        "mangled name does not match"
    );
    h.engine.register_kernel(KernelSymbol {
        kernel_id: 7,
        code_object_id: 0,
        mangled_name: "_Z6kernelv".into(),
        demangled_name: "kernel()".into(),
        registers: 0,
        static_shared_bytes: 0,
        local_bytes: 0,
        param_bytes: 0,
    });
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(h.sink.dispatches().len(), 2);
}

#[test]
fn untracked_memory_is_warned_once_per_kind() {
    let h = harness(2, InProcessMode::KernelReplay);
    for (base, kind) in [
        (0x10_000, AllocKind::Host),
        (0x20_000, AllocKind::Host),
        (0x30_000, AllocKind::Managed),
    ] {
        h.engine.inventory().insert(Region {
            device: 0,
            base,
            bytes: 64,
            kind,
        });
    }
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    launch(&h, &mut backend, LaunchKind::Kernel);
    let warnings = h.sink.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("host memory is not restored"));
    assert_eq!(
        h.sink.costs()[0].bytes_snapshotted,
        2 * (8 + 64),
        "host memory is not staged; device and managed memory are, at S0 and again as F (the host may write managed memory, and what kernels computed from it is the application's)"
    );
}
