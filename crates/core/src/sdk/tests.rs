use super::*;
use crate::backend::LaunchKind;
use crate::config::CounterGroup;

fn info() -> DispatchInfo {
    DispatchInfo {
        device: 0,
        kind: LaunchKind::Kernel,
        kernel_name: "k".into(),
        kernel_id: 1,
        stream_id: 0,
        correlation_id: 1,
        grid: [1, 1, 1],
        block: [1, 1, 1],
        dynamic_shared_bytes: 0,
    }
}

fn policy(groups: usize, mode: InProcessMode) -> CounterGroupsPolicy {
    CounterGroupsPolicy::new(&ToolConfig {
        groups: vec![CounterGroup::default(); groups],
        mode,
        ..ToolConfig::default()
    })
}

#[test]
fn kernel_replay_runs_one_pass_per_collectable_group() {
    let info = info();
    let t = policy(3, InProcessMode::KernelReplay);
    let mut d = PolicyDispatch {
        info: &info,
        dispatch_id: 1,
        device_dispatch_index: 0,
        collectable_groups: 3,
    };
    assert_eq!(t.pass_count(&d), PassCount::Passes(3));
    assert_eq!(t.pass_group(&d, 2), Some(2));
    d.collectable_groups = 2;
    assert_eq!(t.pass_count(&d), PassCount::Passes(2));
    assert_eq!(t.pass_group(&d, 2), None);
}

#[test]
fn rotation_switches_group_every_interval_and_wraps() {
    let info = info();
    let t = policy(3, InProcessMode::Rotation { interval: 2 });
    let groups: Vec<Option<usize>> = (0..8)
        .map(|i| {
            let d = PolicyDispatch {
                info: &info,
                dispatch_id: i + 1,
                device_dispatch_index: i,
                collectable_groups: 3,
            };
            assert_eq!(t.pass_count(&d), PassCount::Passes(1));
            t.pass_group(&d, 0)
        })
        .collect();
    let expected = [0, 0, 1, 1, 2, 2, 0, 0].map(Some).to_vec();
    assert_eq!(groups, expected);
}

#[test]
fn no_groups_means_timestamps_only() {
    let info = info();
    let t = policy(0, InProcessMode::KernelReplay);
    let d = PolicyDispatch {
        info: &info,
        dispatch_id: 1,
        device_dispatch_index: 0,
        collectable_groups: 0,
    };
    assert_eq!(t.pass_count(&d), PassCount::Passes(1));
    assert_eq!(t.pass_group(&d, 0), None);
}
