use super::*;
use kreplay_core::config::{CounterGroup, CounterSpec};

fn group(metrics: &[&str]) -> CounterGroup {
    CounterGroup {
        counters: metrics
            .iter()
            .map(|m| CounterSpec {
                requested: m.to_string(),
                metric: m.to_string(),
            })
            .collect(),
    }
}

fn fill_kernel() -> SimKernel {
    SimKernel::new(1, "fill", "fill", |k: &mut KernelContext<'_>| {
        let (x, n) = (k.arg(0), k.arg(1));
        for i in 0..n {
            let v = k.read_u32(x + 4 * i);
            k.write_u32(x + 4 * i, v + 1);
        }
        k.count_instructions(n);
    })
}

/// One measured launch on `device`, as the engine's ordinary path drives it.
fn measure(device: &mut SimDevice, group: usize, launch: &SimLaunch) -> (Vec<f64>, Timing) {
    device.plan_unit(0, &[Some(group)]).unwrap();
    device.start_execution(0, 0, 1).unwrap();
    device.launch_starts(0).unwrap();
    device.execute(launch).unwrap();
    device.launch_ends(0).unwrap();
    let timing = device.stop_execution(0).unwrap()[0];
    let counters = device
        .unit_counters(0)
        .unwrap()
        .remove(0)
        .unwrap()
        .remove(0);
    (counters.iter().map(|c| c.value).collect(), timing)
}

#[test]
fn counters_follow_what_the_kernel_did() {
    let mut device = SimDevice::new(&[
        group(&["sim__warps_launched.sum", "sim__inst_executed.sum"]),
        group(&["sim__bytes_written.sum", "sim__bytes_read.sum"]),
    ]);
    let x = device.alloc(AllocKind::Device, 400).unwrap().base;
    let launch = SimLaunch {
        kernel: fill_kernel(),
        grid: [2, 1, 1],
        block: [50, 1, 1],
        args: vec![x, 100],
        device: 0,
    };
    for (group, expected) in [(0, vec![4.0, 100.0]), (1, vec![400.0, 400.0])] {
        let (values, timing) = measure(&mut device, group, &launch);
        assert_eq!(values, expected);
        assert!(timing.end_ns > timing.start_ns);
    }
    assert_eq!(device.read_u32s(x, 2).unwrap(), vec![2, 2]);
}

#[test]
fn packed_groups_share_an_execution_and_counters_come_per_pass() {
    let mut device = SimDevice::new(&[
        group(&["sim__warps_launched.sum"]),
        group(&["sim__inst_executed.sum"]),
        group(&["sim__bytes_written.sum", "sim__bytes_read.sum"]),
    ]);
    device.pack_groups();
    let plan = device.plan_unit(0, &[Some(0), Some(1), Some(2)]).unwrap();
    assert_eq!(plan.executions, 2);
    assert_eq!(plan.execution_of_pass, vec![0, 0, 1]);
    let x = device.alloc(AllocKind::Device, 400).unwrap().base;
    let launch = SimLaunch {
        kernel: fill_kernel(),
        grid: [1, 1, 1],
        block: [32, 1, 1],
        args: vec![x, 10],
        device: 0,
    };
    for execution in 0..2 {
        device.start_execution(0, execution, 1).unwrap();
        device.launch_starts(0).unwrap();
        device.execute(&launch).unwrap();
        device.launch_ends(0).unwrap();
        assert_eq!(device.stop_execution(0).unwrap().len(), 1);
    }
    let counters = device.unit_counters(0).unwrap();
    let values: Vec<Vec<f64>> = counters
        .iter()
        .map(|pass| pass.as_ref().unwrap()[0].iter().map(|c| c.value).collect())
        .collect();
    assert_eq!(values, vec![vec![1.0], vec![10.0], vec![40.0, 40.0]]);
}

#[test]
fn a_unit_of_several_launches_may_be_stopped_and_replayed_by_another_thread() {
    let mut device = SimDevice::new(&[group(&["sim__inst_executed.sum"])]);
    device.set_max_window(4);
    let x = device.alloc(AllocKind::Device, 400).unwrap().base;
    let launch = |n| SimLaunch {
        kernel: fill_kernel(),
        grid: [1, 1, 1],
        block: [32, 1, 1],
        args: vec![x, n],
        device: 0,
    };
    device.plan_unit(0, &[Some(0)]).unwrap();
    assert!(device.start_execution(0, 0, 5).is_err(), "over the cap");
    device.start_execution(0, 0, 4).unwrap();
    for n in [10, 20, 30] {
        device.launch_starts(0).unwrap();
        device.execute(&launch(n)).unwrap();
        device.launch_ends(0).unwrap();
    }
    // A launch outside launch_starts/launch_ends is not measured.
    device.execute(&launch(1)).unwrap();
    let shared = SharedSimDevice::new(device);
    let (timings, counters) = {
        let mut other = shared.clone();
        thread::spawn(move || {
            let timings = other.stop_execution(0).unwrap();
            (timings, other.unit_counters(0).unwrap())
        })
        .join()
        .unwrap()
    };
    let values: Vec<f64> = counters[0]
        .as_ref()
        .unwrap()
        .iter()
        .map(|r| r[0].value)
        .collect();
    assert_eq!(values, vec![10.0, 20.0, 30.0]);
    assert!(timings.windows(2).all(|w| w[0].end_ns <= w[1].start_ns));
}

#[test]
fn captures_write_back_what_was_there_when_taken() {
    let mut device = SimDevice::new(&[]);
    let x = device.alloc(AllocKind::Device, 16).unwrap().base;
    device.write_u32s(x, &[1, 2, 3, 4]).unwrap();
    let capture = device.capture(0, x + 4, 8).unwrap();
    device.fill_u32s(x, 9, 4).unwrap();
    device.apply(&capture).unwrap();
    assert_eq!(device.read_u32s(x, 4).unwrap(), vec![9, 2, 3, 9]);
    let y = device.alloc(AllocKind::Device, 16).unwrap().base;
    device.copy(y, x, 16).unwrap();
    assert_eq!(device.read_u32s(y, 4).unwrap(), vec![9, 2, 3, 9]);
}

#[test]
fn a_group_over_the_hardware_limit_is_refused() {
    let mut device = SimDevice::new(&[group(&[
        "sim__warps_launched.sum",
        "sim__inst_executed.sum",
        "sim__cycles_elapsed.max",
    ])]);
    let err = device.plan_unit(0, &[Some(0)]).unwrap_err().to_string();
    assert!(err.contains("at most 2 per pass"), "{err}");
    assert!(device.plan_unit(0, &[Some(1)]).is_err());
    assert!(device.plan_unit(0, &[None]).is_ok());
}

#[test]
fn out_of_bounds_access_is_a_fault_naming_the_kernel() {
    let mut device = SimDevice::new(&[]);
    let x = device.alloc(AllocKind::Device, 8).unwrap().base;
    let launch = SimLaunch {
        kernel: fill_kernel(),
        grid: [1, 1, 1],
        block: [1, 1, 1],
        args: vec![x, 3],
        device: 0,
    };
    let err = device.execute(&launch).unwrap_err();
    assert!(matches!(err, SimError::Fault { ref kernel, .. } if kernel == "fill"));
    assert_eq!(device.read_u32s(x, 2).unwrap(), vec![1, 1]);
}

#[test]
fn device_staging_takes_device_memory_until_released() {
    let mut device = SimDevice::new(&[]);
    device.set_capacity(1000);
    let region = device.alloc(AllocKind::Device, 400).unwrap();
    assert_eq!(device.device_free_bytes(0), 600);
    let snapshot = device.snapshot(0, &[region], Staging::Device).unwrap();
    assert_eq!(device.device_free_bytes(0), 200);
    assert_eq!(
        device.snapshot(0, &[region], Staging::Device).unwrap_err(),
        BackendError::OutOfStagingMemory(Staging::Device, 400)
    );
    device.set_host_staging_limit(100);
    assert!(device.snapshot(0, &[region], Staging::Host).is_err());
    device.write_u32s(region.base, &[9]).unwrap();
    assert_eq!(device.restore(&snapshot).unwrap(), 400);
    assert_eq!(device.read_u32s(region.base, 1).unwrap(), vec![0]);
    device.release(snapshot);
    assert_eq!(device.device_free_bytes(0), 600);
}

#[test]
fn cycles_jitter_but_stay_near_the_work() {
    let mut device = SimDevice::new(&[group(&["sim__cycles_elapsed.max"])]);
    let x = device.alloc(AllocKind::Device, 4000).unwrap().base;
    let launch = SimLaunch {
        kernel: fill_kernel(),
        grid: [1, 1, 1],
        block: [32, 1, 1],
        args: vec![x, 1000],
        device: 0,
    };
    let values: Vec<f64> = (0..8)
        .map(|_| measure(&mut device, 0, &launch).0[0])
        .collect();
    let base = (100 + 1000 * 4 + 8000 / 8) as f64;
    assert!(
        values.iter().all(|v| *v >= base && *v <= base * 1.05 + 1.0),
        "{values:?}"
    );
    assert!(
        values.iter().any(|v| *v != values[0]),
        "no jitter: {values:?}"
    );
}
