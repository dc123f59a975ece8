//! Where a caught signal may run the finish: with every replay window parked.
//!
//! A signal lands on whatever application thread the kernel picks, while another (or the same)
//! thread may be inside the tool: between a launch's two halves, or inside a call its replay
//! window stays open across. Its window is not *parked* then: the finish could not close it (its
//! passes would race the launch under way), and a lock the thread holds would stall the finish
//! until [`FINISH_LIMIT`](super::FINISH_LIMIT). So the engine marks the span of every launch and
//! call with an [`InsideTool`], and:
//! - a signal that lands on a thread inside the tool is *deferred*: the handler notes it and
//!   returns, the thread finishes the launch it was in (its window parked), and the signal is
//!   delivered when the thread leaves the tool, as if it had arrived then. A third signal while
//!   one is deferred is delivered at once (a thread stuck inside the tool must not make Ctrl-C
//!   useless);
//! - once a signal's finish has begun, an application thread that comes to the tool's door waits
//!   there until the process ends: the windows stay parked while the finish closes them
//!   (`Engine::finish_with` waits, bounded, for a window whose owner is still inside a launch).
//!   The thread that runs the finish passes (its own calls may come back into the tool).

use super::door::{DEFERRED, DEPTH, FINISHER, STOPPING};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The span of one launch or call inside the tool, on the thread that entered it; a signal
/// deferred meanwhile is delivered when the thread's last span ends.
#[must_use = "the span ends when this is dropped"]
pub struct InsideTool(());

impl InsideTool {
    /// The calling thread enters the tool (or, while a signal's finish runs, waits at the door
    /// until the process ends).
    pub fn enter() -> InsideTool {
        let depth = DEPTH.with(|depth| depth.get());
        if depth == 0 && STOPPING.load(Ordering::SeqCst) && !FINISHER.with(|f| f.get()) {
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        DEPTH.with(|d| d.set(depth + 1));
        InsideTool(())
    }
}

impl Drop for InsideTool {
    fn drop(&mut self) {
        let outside = DEPTH.with(|depth| {
            let now = depth.get().saturating_sub(1);
            depth.set(now);
            now == 0
        });
        if outside {
            let signal = DEFERRED.swap(0, Ordering::SeqCst);
            if signal != 0 {
                super::signals::deliver(signal);
            }
        }
    }
}
