//! The owner's finish, kept for every ending of the process and run once.

use std::sync::{Once, OnceLock};

type Finish = Box<dyn Fn() + Send + Sync>;

static FINISH: OnceLock<Finish> = OnceLock::new();

/// Keeps `finish` for the endings; `false` when one was kept already (that one stays).
pub(super) fn set(finish: Finish) -> bool {
    FINISH.set(finish).is_ok()
}

/// Runs the installed finish, once per process and never unwinding: a second caller (an exit
/// while a signal's last words run, or the reverse) waits for the first to finish instead of
/// ending the process under it.
pub fn finish_now() {
    static FINISHED: Once = Once::new();
    FINISHED.call_once(|| {
        super::door::mark_finisher();
        if let Some(finish) = FINISH.get() {
            // Inside `call_once`, so a panic neither poisons it nor crosses an exit handler.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(finish));
        }
    });
}
