//! The owner's finish, kept for every ending of the process and run once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Once, OnceLock};

type Finish = Box<dyn Fn() + Send + Sync>;

static FINISH: OnceLock<Finish> = OnceLock::new();

/// Set once the finish has begun: the process is ending (an exit handler or a signal).
static BEGUN: AtomicBool = AtomicBool::new(false);

/// Whether the process's finish has begun: what runs after it (the CUDA runtime's teardown in
/// a later exit handler, say) must make no CUPTI calls, whose libraries may have torn their
/// state down already.
pub fn finish_begun() -> bool {
    BEGUN.load(Ordering::Acquire)
}

/// Keeps `finish` for the endings; `false` when one was kept already (that one stays).
pub(super) fn set(finish: Finish) -> bool {
    FINISH.set(finish).is_ok()
}

/// Runs the installed finish, once per process and never unwinding: a second caller (an exit
/// while a signal's last words run, or the reverse) waits for the first to finish instead of
/// ending the process under it.
pub fn finish_now() {
    static FINISHED: Once = Once::new();
    BEGUN.store(true, Ordering::Release);
    FINISHED.call_once(|| {
        super::door::mark_finisher();
        if let Some(finish) = FINISH.get() {
            // Inside `call_once`, so a panic neither poisons it nor crosses an exit handler.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(finish));
        }
    });
}
