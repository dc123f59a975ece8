//! The set-ups' bookkeeping and the exit's waits, without CUDA.

use super::exit::{
    guard_thread_exit, running_here, wait_at_exit, RunningSetUp, EXITING, EXIT_WAIT, RUNNING,
};
use super::setups::{Preparation, SetUp, SetUps};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A set-up of `key` that gives `value` once `go` is set (or at once when it is `None`),
/// or stops early with 0 when told to.
fn file(setups: &SetUps<u32>, key: usize, value: u32, go: Option<Arc<AtomicBool>>) {
    let cancelled = Arc::new(AtomicBool::new(false));
    let stop = cancelled.clone();
    let thread = std::thread::spawn(move || loop {
        if stop.load(Ordering::Acquire) {
            return 0;
        }
        if go.as_ref().is_none_or(|g| g.load(Ordering::Acquire)) {
            return value;
        }
        std::thread::sleep(Duration::from_millis(1));
    });
    let pid = std::process::id();
    let preparation = Preparation {
        pid,
        thread,
        cancelled,
    };
    setups.lock().insert(key, SetUp::Running(preparation));
}

#[test]
fn a_capture_keeps_the_set_up_for_the_first_dispatch_however_often_it_begins() {
    let setups = SetUps::new(|| u32::MAX);
    file(&setups, 1, 7, None);
    assert!(setups.finish(1), "waited for the running set-up");
    assert!(!setups.finish(1), "a second capture finds it finished");
    assert!(!setups.finish(2), "no set-up for another context");
    assert_eq!(setups.take(1), Some(7), "kept for the first dispatch");
    assert_eq!(setups.take(1), None, "taken once");
}

#[test]
fn a_dispatch_waits_for_a_running_set_up_and_a_panic_is_its_error() {
    let setups = SetUps::new(|| u32::MAX);
    let go = Arc::new(AtomicBool::new(false));
    file(&setups, 1, 5, Some(go.clone()));
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        go.store(true, Ordering::Release);
    });
    assert_eq!(setups.take(1), Some(5));
    release.join().unwrap();
    let thread = std::thread::spawn(|| -> u32 { panic!("set-up failed") });
    let pid = std::process::id();
    let cancelled = Arc::new(AtomicBool::new(false));
    setups.lock().insert(
        2,
        SetUp::Running(Preparation {
            pid,
            thread,
            cancelled,
        }),
    );
    assert_eq!(setups.take(2), Some(u32::MAX));
}

#[test]
fn a_destroyed_context_stops_its_set_up_and_forgets_what_it_kept() {
    let setups = SetUps::new(|| u32::MAX);
    // Never told to go: only the stop ends it.
    file(&setups, 1, 9, Some(Arc::new(AtomicBool::new(false))));
    assert_eq!(setups.abandon(1, Duration::from_secs(5)), Some(true));
    assert_eq!(setups.take(1), None);
    file(&setups, 2, 3, None);
    assert!(setups.finish(2));
    assert_eq!(
        setups.abandon(2, Duration::from_secs(5)),
        None,
        "nothing ran any more"
    );
    assert_eq!(
        setups.take(2),
        None,
        "what it kept is gone with the context"
    );
    // One filed by the process this one was forked from is not waited for.
    let thread = std::thread::spawn(|| 4);
    let cancelled = Arc::new(AtomicBool::new(false));
    let pid = std::process::id().wrapping_add(1);
    setups.lock().insert(
        3,
        SetUp::Running(Preparation {
            pid,
            thread,
            cancelled,
        }),
    );
    assert_eq!(setups.take(3), None);
}

/// The tests that set [`EXITING`] run one at a time.
static EXIT_TESTS: Mutex<()> = Mutex::new(());

#[test]
fn a_first_dispatch_during_a_capture_s_wait_takes_the_set_up() {
    let setups = Arc::new(SetUps::new(|| u32::MAX));
    let go = Arc::new(AtomicBool::new(false));
    file(&setups, 1, 6, Some(go.clone()));
    let capture = {
        let setups = setups.clone();
        std::thread::spawn(move || setups.finish(1))
    };
    std::thread::sleep(Duration::from_millis(10));
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        go.store(true, Ordering::Release);
    });
    assert_eq!(
        setups.take(1),
        Some(6),
        "still filed while the capture waits"
    );
    release.join().unwrap();
    assert!(!capture.join().unwrap(), "the capture finds it taken");
    assert!(setups.lock().is_empty(), "not filed again");
}

#[test]
fn the_process_end_waits_for_running_set_ups_a_bounded_time() {
    let _one = EXIT_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let setups = SetUps::new(|| u32::MAX);
    let go = Arc::new(AtomicBool::new(false));
    file(&setups, 1, 1, Some(go.clone()));
    file(&setups, 2, 2, None);
    assert!(setups.finish(2));
    let released = Arc::new(AtomicBool::new(false));
    let release = {
        let released = released.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            released.store(true, Ordering::Release);
            go.store(true, Ordering::Release);
        })
    };
    setups.finish_all(Duration::from_secs(5));
    assert!(
        released.load(Ordering::Acquire),
        "returned before the set-up ended"
    );
    release.join().unwrap();
    assert!(setups.lock().is_empty());
    // One that never ends is left behind after the bound, not waited for.
    file(&setups, 3, 3, Some(Arc::new(AtomicBool::new(false))));
    let began = Instant::now();
    setups.finish_all(Duration::from_millis(30));
    assert!(began.elapsed() < Duration::from_secs(2));
    assert!(setups.lock().is_empty());
    EXITING.store(false, Ordering::Release);
}

// One test for the process-wide counter of running set-up threads.
#[test]
fn the_exit_waits_for_running_set_ups_of_this_process_only() {
    let _one = EXIT_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    // A set-up that ends 50 ms from now: the exit handler returns once it has.
    let running = RunningSetUp::start();
    assert_eq!(running_here(), 1);
    let ends = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        drop(running);
    });
    let began = Instant::now();
    wait_at_exit();
    let waited = began.elapsed();
    ends.join().unwrap();
    let exiting = EXITING.swap(false, Ordering::AcqRel);
    assert!(waited >= Duration::from_millis(40), "{waited:?}");
    assert!(waited < EXIT_WAIT, "{waited:?}");
    assert!(exiting, "set-ups stop at their next step");
    assert_eq!(running_here(), 0);
    // Counted by the process this one was forked from: nothing to wait for.
    let parent = u64::from(std::process::id().wrapping_add(1));
    RUNNING.store((parent << 32) | 1, Ordering::Release);
    assert_eq!(running_here(), 0);
    let began = Instant::now();
    wait_at_exit();
    EXITING.store(false, Ordering::Release);
    assert!(began.elapsed() < Duration::from_secs(1));
    // A set-up started in this process counts afresh, and its end is not lost.
    let again = RunningSetUp::start();
    assert_eq!(running_here(), 1);
    drop(again);
    assert_eq!(running_here(), 0);
}

#[test]
fn a_thread_that_called_the_driver_waits_at_its_end_for_running_set_ups() {
    let _one = EXIT_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let running = RunningSetUp::start();
    let (guarded, guarded_rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        guard_thread_exit();
        guarded.send(()).unwrap();
        // Ends here: its thread-local guard waits for the set-up.
    });
    guarded_rx.recv().unwrap();
    // The set-up ends 50 ms from now; the thread's end (its join) waits for it.
    let began = Instant::now();
    let ends = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        drop(running);
    });
    thread.join().unwrap();
    let waited = began.elapsed();
    ends.join().unwrap();
    assert!(waited >= Duration::from_millis(40), "{waited:?}");
    assert!(
        !EXITING.load(Ordering::Acquire),
        "a thread's end stops no set-up"
    );
    // With none running, a guarded thread ends at once.
    std::thread::spawn(guard_thread_exit).join().unwrap();
}
