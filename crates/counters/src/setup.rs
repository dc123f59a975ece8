//! Counter set-up begun at context creation, on a thread of the tool's own: CUPTI's profiler
//! initialisation, the device's counter-availability image (≈ 130 ms on an H200), the group
//! checks and configuration images, and the first configuration programmed into the hardware
//! ([`RangeProfiler::warm_up`](crate::profiler::RangeProfiler::warm_up)). The application's
//! first dispatch with counters on that context takes the result (waiting for it if needed), so
//! the set-up overlaps what the application does in between (allocations, copies, module loads,
//! library handles). `KREPLAY_EARLY_SETUP=0` leaves it to the first dispatch.
//!
//! The context-creation callback runs while the driver holds locks of its own, so starting a
//! set-up must never wait for a lock that a thread inside CUDA or CUPTI may hold (the backend's
//! is held across `cuptiRangeProfilerStop`, which takes a driver lock): [`CounterSetup`] keeps
//! its set-ups behind a lock of its own, held only to file or take one, never across CUDA calls
//! or a join.
//!
//! Three moments must not meet a set-up still running (each ended an application on the H200,
//! CUDA 13.0, 2026-12-01, `bench/probes/setup_at_exit.sh`):
//! - the process's exit: CUPTI and nvperf create static state at their first use, on the
//!   set-up thread, so its destructors are registered after kreplay's exit handler and run
//!   before it, under the set-up (SIGSEGV in `libnvperf_host.so`). `wait_at_exit` is
//!   registered after the profiler's initialisation (on the application's thread at its first
//!   driver call after `cuInit`, before any context: [`CounterSetup::initialize_profiler`]; a
//!   set-up thread does it should that fail) and after each step of a set-up, so the exit
//!   waits for a set-up before the destructors of finished steps run; a set-up that sees the
//!   exit begun stops at its next step. An exit that begins in the middle of a step (a third
//!   of short runs that measured nothing, 2026-12-02) waits earlier, in a thread-local
//!   destructor of the exiting thread, which `exit()` runs before any exit handler ([`guard_thread_exit`], taken by every thread that calls the driver);
//! - a stream capture: a capture begun while the set-up ran was invalidated
//!   (`cudaStreamEndCapture`: "operation failed due to a previous error during capture"), so
//!   beginning one waits for the set-up of the current context first
//!   ([`CounterSetup::finish`]; another context's set-up is not waited for);
//! - the context's destruction ([`CounterSetup::abandon`]: it waits inside the driver's
//!   resource callback, bounded, since the set-up may need a lock the driver holds there).

mod counter_setup;
mod exit;
mod setups;
#[cfg(test)]
mod tests;

pub use counter_setup::{AheadWork, CounterSetup};
pub use exit::guard_thread_exit;
