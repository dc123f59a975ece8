//! The process's exit handlers: every `atexit` of the tool is registered here.
//!
//! The C library runs exit handlers in the reverse order of their registration, and a library
//! that creates static state registers its destructors at that moment. So *when* a handler is
//! registered decides what it runs before: [`at_exit`] registers at once, and its caller picks
//! the moment (the counter set-up registers its wait after each of its steps, to run before the
//! destructors that step registered: `kreplay_counters::setup`).

/// Registers `handler` to run when the process exits, before every exit handler registered so
/// far (and after those registered later). It must not unwind: it runs from C.
pub fn at_exit(handler: extern "C" fn()) {
    // SAFETY: registers a plain extern "C" function.
    unsafe { libc::atexit(handler) };
}

/// Registers the finish as an exit handler. Registered from the owner's initialisation (for the
/// interception, inside `cuInit`): it is expected (not verified) to run before a teardown
/// handler that the CUDA runtime registered earlier, while contexts exist.
pub(super) fn finish_at_exit() {
    at_exit(finish_on_exit);
}

extern "C" fn finish_on_exit() {
    // A signal on this thread while it finishes would wait for the finish it interrupted (30 s,
    // then the window's passes lost): it is held until the exit, or taken by another thread.
    super::signals::hold_signals();
    super::finish::finish_now();
}
