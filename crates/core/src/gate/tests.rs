use super::*;
use std::sync::atomic::{AtomicBool, Ordering};

#[test]
fn holder_passes_its_own_fences_and_nested_window_is_reentrant() {
    let gate = Arc::new(ReplayGate::default());
    let outer = gate.fence();
    let inner = gate.fence();
    let window = gate.exclusive(Duration::from_secs(1)).unwrap();
    let passthrough = gate.fence();
    assert_eq!(
        gate.exclusive(Duration::from_millis(1)).unwrap_err(),
        ExclusiveRefused::Reentrant
    );
    drop(passthrough);
    drop(window);
    drop(inner);
    drop(outer);
    assert!(gate.is_idle());
}

#[test]
fn two_fenced_threads_asking_for_the_window_do_not_deadlock() {
    let gate = Arc::new(ReplayGate::default());
    let fence = gate.fence();
    let first = {
        let gate = gate.clone();
        thread::spawn(move || {
            let fence = gate.fence();
            // Waits for the main thread's fence, then gets the window.
            let window = gate.exclusive(Duration::from_secs(10));
            drop(fence);
            window.is_ok()
        })
    };
    // Wait until the first thread waits for the window with its fence held.
    while gate.lock().fenced_writers_waiting.is_empty() {
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        gate.exclusive(Duration::from_secs(10)).unwrap_err(),
        ExclusiveRefused::Contended
    );
    drop(fence);
    assert!(first.join().unwrap());
    assert!(gate.is_idle());
}

#[test]
fn a_parked_owner_in_a_spanned_call_holds_off_new_windows_until_the_call_ends() {
    let gate = Arc::new(ReplayGate::default());
    let hold = gate.exclusive(Duration::from_secs(1)).unwrap();
    assert!(gate.fence_in_parked_window().is_none(), "not parked yet");
    hold.park();
    let call = gate.fence_in_parked_window().expect("the owner's call");
    let other = |gate: &Arc<ReplayGate>| {
        let gate = gate.clone();
        thread::spawn(move || gate.exclusive(Duration::from_millis(20)).map(drop))
            .join()
            .unwrap()
    };
    assert_eq!(
        other(&gate),
        Err(ExclusiveRefused::Parked),
        "others adopt it"
    );
    // Another thread closed the window while the owner's call goes on.
    drop(hold);
    assert_eq!(
        other(&gate),
        Err(ExclusiveRefused::Timeout),
        "the call holds"
    );
    drop(call);
    assert_eq!(other(&gate), Ok(()));
    assert!(gate.is_idle());
}

#[test]
fn a_fence_dropped_on_another_thread_still_releases() {
    let gate = Arc::new(ReplayGate::default());
    let fence = gate.fence();
    thread::spawn(move || drop(fence)).join().unwrap();
    assert!(gate.is_idle());
}

#[test]
fn other_threads_wait_for_the_window() {
    let gate = Arc::new(ReplayGate::default());
    let window = gate.exclusive(Duration::from_secs(1)).unwrap();
    let entered = Arc::new(AtomicBool::new(false));
    let worker = {
        let gate = gate.clone();
        let entered = entered.clone();
        thread::spawn(move || {
            let _fence = gate.fence();
            entered.store(true, Ordering::SeqCst);
        })
    };
    thread::sleep(Duration::from_millis(50));
    assert!(
        !entered.load(Ordering::SeqCst),
        "fence passed an open window"
    );
    drop(window);
    worker.join().unwrap();
    assert!(entered.load(Ordering::SeqCst));
    assert!(gate.is_idle());
}

#[test]
fn a_parked_window_is_reported_instead_of_waited_for_and_can_be_adopted() {
    let gate = Arc::new(ReplayGate::default());
    let hold = gate.exclusive(Duration::from_secs(1)).unwrap();
    hold.park();
    assert!(gate.is_parked());
    // The owner itself is told too: its own API call must close its window first.
    assert_eq!(gate.fence_unless_parked(false).unwrap_err(), Parked);
    let (tx, rx) = std::sync::mpsc::channel();
    let other = {
        let gate = gate.clone();
        thread::spawn(move || {
            let refused = gate.fence_unless_parked(false).is_err();
            let window = gate.exclusive(Duration::from_secs(1)).unwrap_err();
            tx.send((refused, window)).unwrap();
            // Adopt and close: afterwards the gate is free.
            hold.adopt();
            assert!(!gate.is_parked());
            let own = gate.fence_unless_parked(false);
            assert!(own.is_ok(), "the adopter passes its own fences");
            drop(own);
            drop(hold);
        })
    };
    let (refused, window) = rx.recv().unwrap();
    assert!(refused);
    assert_eq!(window, ExclusiveRefused::Parked);
    other.join().unwrap();
    assert!(gate.is_idle());
}

#[test]
fn a_fence_waiting_for_a_window_wakes_when_it_is_parked() {
    let gate = Arc::new(ReplayGate::default());
    let hold = gate.exclusive(Duration::from_secs(1)).unwrap();
    let waiter = {
        let gate = gate.clone();
        thread::spawn(move || gate.fence_unless_parked(false).is_err())
    };
    thread::sleep(Duration::from_millis(30));
    hold.park();
    assert!(
        waiter.join().unwrap(),
        "the waiter was not told of the parked window"
    );
    drop(hold);
    assert!(gate.is_idle());
}

#[test]
fn window_times_out_while_another_thread_is_fenced() {
    let gate = Arc::new(ReplayGate::default());
    let (taken_tx, taken_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let worker = {
        let gate = gate.clone();
        thread::spawn(move || {
            let _fence = gate.fence();
            taken_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        })
    };
    taken_rx.recv().unwrap();
    assert_eq!(
        gate.exclusive(Duration::from_millis(30)).unwrap_err(),
        ExclusiveRefused::Timeout
    );
    release_tx.send(()).unwrap();
    worker.join().unwrap();
    assert!(gate.exclusive(Duration::from_millis(30)).is_ok());
}
