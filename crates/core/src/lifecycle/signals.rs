//! Records kept when the profiled process is ended by a signal.
//!
//! `abort()`, `kill` (SIGTERM), Ctrl-C (SIGINT), SIGHUP and SIGQUIT end a process without its
//! exit handlers, so a replay window still open (its later passes not run) and records still
//! queued for the writer would be lost. [`install`] (through the lifecycle's
//! [`install`](super::install)) catches those signals where the process left them at their
//! default action: the handler wakes a thread of the tool's own, which runs `finish` (the same
//! work as a normal exit: the open window's passes, then the flush), waits for
//! it up to [`FINISH_LIMIT`], then restores the default action and raises the signal again, so
//! the process still ends by the same signal (a core dump included). A handler the application
//! installs later replaces ours and decides for itself. SIGKILL is not caught. A crash
//! ([`CRASH_SIGNALS`]) runs no finish (nothing of the tool may run on a thread that faulted,
//! and the open window's passes would need the device): its thread only waits, at most
//! [`CRASH_WAIT`], for the database writer's thread to commit what was sent before the fault,
//! then the process ends by the same fault.
//!
//! The handler itself only writes to a pipe, reads an atomic and sleeps (async-signal-safe); the
//! work runs on the tool's thread, which blocks these signals. A signal that lands on a thread
//! inside the tool waits until the thread leaves it (see `inside`), so that the open window is
//! parked when the finish closes it. If the thread that got the signal
//! holds a lock `finish` needs (it was inside the tool), `finish` waits until the limit and the
//! process ends without it.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// Signals whose default action ends the process without exit handlers.
pub const SIGNALS: [libc::c_int; 5] = [
    libc::SIGABRT,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
];

/// How long a signalled process waits for its records before it ends anyway.
pub const FINISH_LIMIT: Duration = Duration::from_secs(30);

/// Faults of the process itself, left at their default action: the faulting thread waits for
/// the records sent before it to be committed ([`kreplay_format::db::records_settled`]), then
/// the process ends by the fault.
pub const CRASH_SIGNALS: [libc::c_int; 4] =
    [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE];

/// The longest a crashing thread waits for the writer (which commits every 10 ms).
pub const CRASH_WAIT: Duration = Duration::from_secs(1);

type Finish = Box<dyn Fn() + Send + Sync>;

static FINISH: OnceLock<Finish> = OnceLock::new();
/// The write end of the pipe that wakes the thread (-1: not installed).
static WAKE: AtomicI32 = AtomicI32::new(-1);
/// The process that installed the handlers (a forked child leaves them alone).
static OWNER: AtomicU32 = AtomicU32::new(0);
static STARTED: AtomicBool = AtomicBool::new(false);
static DONE: AtomicBool = AtomicBool::new(false);

/// Catches [`SIGNALS`] left at their default action so that `finish` runs before the process
/// ends by them. Once per process; later calls do nothing. Returns the signals caught.
pub fn install(finish: impl Fn() + Send + Sync + 'static) -> Vec<libc::c_int> {
    if FINISH.set(Box::new(finish)).is_err() {
        return Vec::new();
    }
    let mut ends = [0; 2];
    // SAFETY: pipe(2) into a two-element array.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Vec::new();
    }
    let read_end = ends[0];
    let spawned = std::thread::Builder::new()
        .name("kreplay-last-words".into())
        .spawn(move || {
            block_signals();
            let mut byte = 0u8;
            // SAFETY: reads one byte into a local from our own pipe.
            let n = unsafe { libc::read(read_end, (&mut byte as *mut u8).cast(), 1) };
            if n == 1 {
                if let Some(finish) = FINISH.get() {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(finish));
                }
                DONE.store(true, Ordering::SeqCst);
            }
        });
    if spawned.is_err() {
        return Vec::new();
    }
    WAKE.store(ends[1], Ordering::SeqCst);
    OWNER.store(std::process::id(), Ordering::SeqCst);
    for signal in CRASH_SIGNALS {
        wait_at_crash_if_default(signal);
    }
    SIGNALS
        .iter()
        .copied()
        .filter(|&signal| catch_if_default(signal))
        .collect()
}

/// Installs the crash handler for `signal` when its action is the default one: once, its
/// action back to the default on entry (`SA_RESETHAND`).
fn wait_at_crash_if_default(signal: libc::c_int) -> bool {
    let handler = on_crash as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void);
    install_if_default(
        signal,
        handler as libc::sighandler_t,
        libc::SA_SIGINFO | libc::SA_RESETHAND,
    )
}

extern "C" fn on_crash(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: only async-signal-safe calls: getpid, atomic loads, the report's system calls,
    // nanosleep, raise; `info` and `context` are the kernel's.
    unsafe {
        if libc::getpid() as u32 == OWNER.load(Ordering::SeqCst) {
            // Const-initialised, no destructor: readable here.
            let inside = super::door::DEPTH
                .try_with(|depth| depth.get() > 0)
                .unwrap_or(false);
            super::crash_report::report(signal, info, context, inside);
            let sent = kreplay_format::db::records_sent();
            let step = libc::timespec {
                tv_sec: 0,
                tv_nsec: 5_000_000,
            };
            let mut waited = Duration::ZERO;
            while !kreplay_format::db::records_settled(sent) && waited < CRASH_WAIT {
                libc::nanosleep(&step, std::ptr::null_mut());
                waited += Duration::from_millis(5);
            }
        }
        // The action is the default again (SA_RESETHAND). A fault returns to the faulting
        // instruction, which faults again and ends the process (a core dump included); a
        // signal sent by kill or raise (code 0 or below) is raised again, delivered once this
        // handler returns.
        if info.is_null() || (*info).si_code <= 0 {
            libc::raise(signal);
        }
    }
}

/// The process ends by a signal with nothing more to do (the tool's own fatal abort, its
/// records already stored): the handlers re-raise at once.
pub fn disarm() {
    STARTED.store(true, Ordering::SeqCst);
    DONE.store(true, Ordering::SeqCst);
}

/// Installs the handler for `signal` when its action is the default one.
fn catch_if_default(signal: libc::c_int) -> bool {
    let handler = on_signal as extern "C" fn(libc::c_int);
    install_if_default(signal, handler as libc::sighandler_t, libc::SA_RESTART)
}

/// Makes `handler` (async-signal-safe) `signal`'s action with `flags`, only where the process
/// left it at the default action (an application's own handler is never replaced).
fn install_if_default(
    signal: libc::c_int,
    handler: libc::sighandler_t,
    flags: libc::c_int,
) -> bool {
    // SAFETY: sigaction with zeroed, then filled, structs.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
            || old.sa_sigaction != libc::SIG_DFL
        {
            return false;
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler;
        libc::sigemptyset(&mut action.sa_mask);
        action.sa_flags = flags;
        libc::sigaction(signal, &action, std::ptr::null_mut()) == 0
    }
}

/// Blocks every signal on the calling thread, for the tool's own threads (the database writer,
/// the last-words thread, the counter set-up, the drain worker): a handler of the process (the
/// tool's last words on SIGTERM, say) must not run on a thread its work waits for. Faults stay
/// unblocked: a fault on a thread that blocks it ends the process without running the
/// process's handler (a crash reporter, a backtrace printer), so they reach it as from any
/// thread. The database writer's thread runs it because its creator passes it
/// (`DbWriter::create`): the writers' crate handles no signals.
pub fn block_signals() {
    // SAFETY: a signal set built and applied to this thread only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        for fault in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGTRAP,
            libc::SIGSYS,
        ] {
            libc::sigdelset(&mut set, fault);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Blocks [`SIGNALS`] on the calling thread, for a thread about to run the finishing work
/// itself (the process's exit handler): a signal landing on it would wait for that very work,
/// which it interrupted. The signal goes to another thread, or stays pending until the exit.
pub fn hold_signals() {
    // SAFETY: a signal set built here, applied to this thread only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in SIGNALS {
            libc::sigaddset(&mut set, signal);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

extern "C" fn on_signal(signal: libc::c_int) {
    // SAFETY: getpid is async-signal-safe.
    let own = unsafe { libc::getpid() } as u32 == OWNER.load(Ordering::SeqCst);
    // Inside the tool the open window cannot be closed: the thread leaves the tool first.
    if own && super::door::defer(signal) {
        return;
    }
    deliver(signal);
}

/// Runs the finish for `signal` (waking the last-words thread, or waiting for the finish it
/// runs already), then ends the process by it: from the handler, or from the thread that left
/// the tool with the signal deferred.
pub(super) fn deliver(signal: libc::c_int) {
    // SAFETY: only async-signal-safe calls: getpid, write, nanosleep, signal, raise.
    unsafe {
        let own = libc::getpid() as u32 == OWNER.load(Ordering::SeqCst);
        // The first signal wakes the thread; every one (a second Ctrl-C too) waits for it.
        let woken = if !own {
            false
        } else if STARTED.swap(true, Ordering::SeqCst) {
            true
        } else {
            super::door::stop_at_the_door();
            let wake = WAKE.load(Ordering::SeqCst);
            let byte = signal as u8;
            wake >= 0 && libc::write(wake, (&byte as *const u8).cast(), 1) == 1
        };
        if woken {
            let step = libc::timespec {
                tv_sec: 0,
                tv_nsec: 10_000_000,
            };
            let mut waited = Duration::ZERO;
            while !DONE.load(Ordering::SeqCst) && waited < FINISH_LIMIT {
                libc::nanosleep(&step, std::ptr::null_mut());
                waited += Duration::from_millis(10);
            }
        }
        // Ends the process as the signal would have: the default action, raised again (from
        // the handler, delivered once it returns, the signal being blocked while it runs; from
        // a thread leaving the tool, at once).
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_threads_block_signals_but_not_faults() {
        let mask = std::thread::spawn(|| {
            super::block_signals();
            // SAFETY: reads this thread's mask into a zeroed set.
            unsafe {
                let mut mask: libc::sigset_t = std::mem::zeroed();
                libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask);
                let blocked = |s| libc::sigismember(&mask, s) == 1;
                (
                    [libc::SIGTERM, libc::SIGINT, libc::SIGPIPE].map(blocked),
                    [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL].map(blocked),
                )
            }
        })
        .join()
        .unwrap();
        assert_eq!(mask, ([true; 3], [false; 4]));
    }

    #[test]
    fn held_signals_are_blocked_on_that_thread_only() {
        let blocked = |signal| {
            // SAFETY: reads this thread's mask.
            unsafe {
                let mut now: libc::sigset_t = std::mem::zeroed();
                libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut now);
                libc::sigismember(&now, signal) == 1
            }
        };
        let inside = std::thread::spawn(move || {
            hold_signals();
            SIGNALS.iter().all(|s| blocked(*s)) && !blocked(libc::SIGUSR1)
        })
        .join()
        .unwrap();
        assert!(inside, "every handled signal, and only those, held");
        assert!(
            !blocked(libc::SIGTERM),
            "the calling thread's mask is its own"
        );
    }

    /// A child that faults right after sending records: its faulting thread waits for the
    /// writer, so every record sent before the fault is in its database, and it still dies by
    /// the fault (without the wait the last records, not yet committed, were lost).
    #[test]
    fn a_crashing_child_keeps_what_it_sent_and_dies_by_the_fault() {
        use kreplay_format::{DbWriter, ProcessInfo, Record, RecordSink, Warning};
        const SENT: usize = 200;
        let dir = std::env::temp_dir().join(format!("kreplay-crash-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("crash.db");
        let mut ends = [0; 2];
        // SAFETY: a pipe for the child's stderr.
        assert_eq!(unsafe { libc::pipe(ends.as_mut_ptr()) }, 0);
        // SAFETY: the child installs the handlers, sends, faults and never returns.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            // SAFETY: the child's stderr into the pipe.
            unsafe { libc::dup2(ends[1], 2) };
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: no core file from this test's fault; SIGSEGV at its default action, as
            // in a C or Python application (Rust's runtime catches it for stack overflows).
            unsafe {
                libc::setrlimit(libc::RLIMIT_CORE, &none);
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
            }
            let caught = install(|| {});
            let writer = DbWriter::create(&db, block_signals).unwrap();
            if caught.is_empty() {
                // SAFETY: ends the child (the handlers were not installed).
                unsafe { libc::_exit(3) };
            }
            writer.send(Record::Process(ProcessInfo {
                pid: std::process::id(),
                ..ProcessInfo::default()
            }));
            for n in 0..SENT {
                writer.send(Record::Warning(Warning {
                    message: format!("record {n}"),
                }));
            }
            // SAFETY: none: a write through a null pointer, the fault under test.
            unsafe { std::ptr::write_volatile(std::ptr::null_mut::<u8>(), 1) };
            // SAFETY: ends the child (the fault did not).
            unsafe { libc::_exit(4) };
        }
        // SAFETY: closes our copy of the write end, then reads what the child wrote.
        unsafe { libc::close(ends[1]) };
        let mut said = Vec::new();
        let mut chunk = [0u8; 512];
        loop {
            // SAFETY: reads into a local buffer.
            let n = unsafe { libc::read(ends[0], chunk.as_mut_ptr().cast(), chunk.len()) };
            if n <= 0 {
                break;
            }
            said.extend_from_slice(&chunk[..n as usize]);
        }
        let said = String::from_utf8_lossy(&said);
        let mut status = 0;
        // SAFETY: waits for our own child.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSEGV,
            "ended by the fault: status {status:#x}"
        );
        // The report names the fault, and the test's own executable as where it happened.
        let exe = std::env::current_exe().unwrap();
        let exe = exe.file_name().unwrap().to_string_lossy();
        assert!(
            said.contains(&format!(
                "kreplay: the application crashed: SIGSEGV at address 0x0, instruction {exe}+0x"
            )) && said.contains("on a thread outside kreplay's handling of CUDA calls"),
            "{said}"
        );
        let kept: usize = kreplay_format::read_database(&db)
            .unwrap()
            .iter()
            .map(|p| p.warnings.len())
            .sum();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(kept, SENT, "every record sent before the fault is kept");
    }

    #[test]
    fn a_signalled_child_runs_finish_then_dies_by_the_same_signal() {
        for signal in [libc::SIGABRT, libc::SIGTERM] {
            let mut ends = [0; 2];
            // SAFETY: a pipe for the child to report through.
            assert_eq!(unsafe { libc::pipe(ends.as_mut_ptr()) }, 0);
            // SAFETY: the child installs the handlers, signals itself and never returns.
            let child = unsafe { libc::fork() };
            assert!(child >= 0);
            if child == 0 {
                let report = ends[1];
                let caught = install(move || {
                    std::thread::sleep(Duration::from_millis(100));
                    // SAFETY: writes one byte to the inherited pipe.
                    unsafe { libc::write(report, b"F".as_ptr().cast(), 1) };
                });
                if !caught.contains(&signal) {
                    // SAFETY: ends the child.
                    unsafe { libc::_exit(3) };
                }
                if signal == libc::SIGABRT {
                    let none = libc::rlimit {
                        rlim_cur: 0,
                        rlim_max: 0,
                    };
                    // SAFETY: no core file from this test's abort.
                    unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) };
                    std::process::abort();
                }
                // SAFETY: a signal to ourselves.
                unsafe { libc::kill(libc::getpid(), signal) };
                std::thread::sleep(Duration::from_secs(5));
                // SAFETY: ends the child (the signal did not).
                unsafe { libc::_exit(4) };
            }
            // SAFETY: closes our copy of the write end, then reads what the child wrote.
            unsafe { libc::close(ends[1]) };
            let mut byte = 0u8;
            let n = unsafe { libc::read(ends[0], (&mut byte as *mut u8).cast(), 1) };
            let mut status = 0;
            // SAFETY: waits for our own child.
            assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
            assert_eq!(
                (n, byte),
                (1, b'F'),
                "finish ran before signal {signal} ended the child"
            );
            assert!(
                libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == signal,
                "ended by signal {signal}: status {status:#x}"
            );
        }
    }
}
