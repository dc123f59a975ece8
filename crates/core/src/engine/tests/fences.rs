//! Other threads and other devices: fences held for a whole replay, deadlines, calls on
//! another device.

use super::*;

#[test]
fn another_threads_fence_past_the_deadline_is_fatal() {
    let mut config = config(2, InProcessMode::KernelReplay);
    config.drain_timeout_ms = 30;
    let h = Arc::new(harness_with(config, None));
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = {
        let h = h.clone();
        std::thread::spawn(move || {
            let _fence = h.engine.fence_with(&mut MockBackend::new());
            held_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        })
    };
    held_rx.recv().unwrap();
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    release_tx.send(()).unwrap();
    holder.join().unwrap();
    let aborts = h.aborts.lock().unwrap().clone();
    assert_eq!(aborts.len(), 1);
    assert!(
        aborts[0].0.contains("other application threads"),
        "{}",
        aborts[0].0
    );
    assert_eq!(backend.count(&Op::Drain), 0);
    assert_eq!(backend.value, 1);
}

#[test]
fn a_call_on_another_device_does_not_hold_off_a_replay() {
    let mut config = config(2, InProcessMode::KernelReplay);
    config.drain_timeout_ms = 30;
    let h = Arc::new(harness_with(config, None));
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = {
        let h = h.clone();
        std::thread::spawn(move || {
            let mut theirs = MockBackend::new();
            let guard = h.engine.enter_call(
                &mut theirs,
                "cuStreamSynchronize",
                CallEffect::NoDeviceWrite,
                DeviceScope::One(1),
            );
            held_tx.send(()).unwrap();
            release_rx.recv().unwrap();
            h.engine.exit_call(&mut theirs, guard);
        })
    };
    held_rx.recv().unwrap();
    // Device 0's replay goes on while the call on device 1 is in flight.
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    release_tx.send(()).unwrap();
    holder.join().unwrap();
    assert!(h.aborts.lock().unwrap().is_empty());
    assert_eq!(backend.value, 1, "restored between passes");
    assert_eq!(backend.count(&Op::Execute), 1);
    assert_eq!(
        h.sink.costs().iter().map(|c| c.outcome).collect::<Vec<_>>(),
        vec![ReplayOutcome::Replayed]
    );
    // A call on every device would have held it off (the test above): the scope matters.
    assert!(h.engine.gates_idle());
}

/// A launch on `device` as a backend drives it.
fn launch_on(h: &Harness, backend: &mut MockBackend, device: DeviceId, kind: LaunchKind) {
    let ticket = h.engine.launch_enter(
        backend,
        &DispatchInfo {
            device,
            ..info(kind)
        },
    );
    backend.execute();
    h.engine.launch_exit(backend, ticket, &());
}

#[test]
fn launches_inside_calls_on_each_others_devices_run_once_instead_of_waiting() {
    // Thread X is inside a call on device 1 and launches on device 0; thread Y is inside a
    // call on device 0 and launches on device 1. Each replay would wait for the other's call:
    // both launches run once, nothing waits out the deadline.
    let mut config = config(2, InProcessMode::KernelReplay);
    config.drain_timeout_ms = 300;
    let h = Arc::new(harness_with(config, None));
    let both_inside = Arc::new(std::sync::Barrier::new(2));
    let threads: Vec<_> = [(1, 0), (0, 1)]
        .into_iter()
        .map(|(call_device, launch_device)| {
            let (h, both_inside) = (h.clone(), both_inside.clone());
            std::thread::spawn(move || {
                let mut backend = MockBackend::new();
                let guard = h.engine.enter_call(
                    &mut backend,
                    "cuLaunchHostFunc",
                    CallEffect::NoDeviceWrite,
                    DeviceScope::One(call_device),
                );
                both_inside.wait();
                launch_on(&h, &mut backend, launch_device, LaunchKind::Kernel);
                h.engine.exit_call(&mut backend, guard);
                backend.value
            })
        })
        .collect();
    let values: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(
        h.aborts.lock().unwrap().is_empty(),
        "{:?}",
        h.aborts.lock().unwrap()
    );
    assert_eq!(values, vec![1, 1], "each launch ran once");
    let outcomes: Vec<ReplayOutcome> = h.sink.costs().iter().map(|c| c.outcome).collect();
    assert_eq!(outcomes, vec![ReplayOutcome::DeclinedError; 2]);
    assert!(h
        .sink
        .warnings()
        .iter()
        .any(|w| w.contains("inside a call on another device")));
    assert!(h.engine.gates_idle());
}

#[test]
fn other_threads_are_fenced_off_for_the_whole_replay() {
    use std::sync::atomic::AtomicBool;
    let h = Arc::new(harness(2, InProcessMode::KernelReplay));
    let mut backend = MockBackend::new();
    let ticket = h
        .engine
        .launch_enter(&mut backend, &info(LaunchKind::Kernel));
    let passed = Arc::new(AtomicBool::new(false));
    let other = {
        let (h, passed) = (h.clone(), passed.clone());
        std::thread::spawn(move || {
            let _fence = h.engine.fence_with(&mut MockBackend::new());
            passed.store(true, Ordering::SeqCst);
        })
    };
    backend.execute();
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !passed.load(Ordering::SeqCst),
        "a fence passed during pass 0"
    );
    // The replaying thread passes its own fences.
    drop(h.engine.fence_with(&mut backend));
    h.engine.launch_exit(&mut backend, ticket, &());
    other.join().unwrap();
    assert!(passed.load(Ordering::SeqCst));
}
