//! The thread-local re-entrancy guard. Every driver call the tool makes fires CUPTI callbacks on
//! the calling thread (CUPTI does not suppress them), so each runs inside a [`ToolScope`] and the
//! callback returns at once while [`in_tool`] is true. The scope is entered by the call wrappers
//! themselves ([`drv!`](crate::drv), [`cupti_call!`](crate::cupti_call)), and for their whole
//! life by the tool's own threads (the counter set-up, the drain); CUPTI's host-only profiler
//! calls (`cupti::host_object`) make no driver calls and need none.

use std::cell::Cell;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// While alive, this thread's CUDA calls are the tool's own.
#[must_use = "the scope ends when this value is dropped"]
pub struct ToolScope {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl ToolScope {
    pub fn enter() -> Self {
        DEPTH.with(|d| d.set(d.get() + 1));
        ToolScope {
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for ToolScope {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Whether the current thread is inside tool work (its callbacks must be ignored).
pub fn in_tool() -> bool {
    DEPTH.with(|d| d.get() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_are_per_thread() {
        assert!(!in_tool());
        {
            let _a = ToolScope::enter();
            assert!(in_tool());
            {
                let _b = ToolScope::enter();
                assert!(in_tool());
            }
            assert!(in_tool());
            std::thread::spawn(|| assert!(!in_tool())).join().unwrap();
        }
        assert!(!in_tool());
    }
}
