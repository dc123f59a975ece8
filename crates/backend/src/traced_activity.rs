//! Kernel launches timed without waiting through CUPTI's records of their executions
//! (`kreplay_cuda::activity`): the launches whose records are awaited, by correlation id, and the
//! records that came for them. A record only ever comes once the kernel has run, and is taken
//! off CUPTI at a flush (the reader thread's, every millisecond, or a wait's here).

use kreplay_cuda::activity::{self, KernelTimes};
use kreplay_cuda::error::CudaError;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// How long a record is waited for once the device has completed the kernel: CUPTI gives it at
/// the next flush, so only a CUPTI that no longer delivers them (another tool took its activity
/// buffers) misses it.
const RECORD_WAIT: Duration = Duration::from_secs(2);
/// Between two looks while waiting.
const POLL: Duration = Duration::from_micros(200);

/// The launches awaiting their records (by tag: the launch call's correlation id) and the
/// records already come (`None`: CUPTI gave it without times).
#[derive(Default)]
pub(crate) struct Inbox {
    awaited: HashSet<u64>,
    arrived: HashMap<u64, Option<(u64, u64)>>,
}

impl Inbox {
    /// A launch timed by its record, about to be issued.
    pub(crate) fn expect(&mut self, tag: u64) {
        self.awaited.insert(tag);
    }

    /// A launch that will have no record (it did not execute), or whose record is no longer
    /// awaited.
    pub(crate) fn forget(&mut self, tag: u64) {
        self.awaited.remove(&tag);
        self.arrived.remove(&tag);
    }

    /// Keeps the records of awaited launches (others are other launches', not timed here).
    pub(crate) fn receive(&mut self, records: impl IntoIterator<Item = KernelTimes>) {
        for record in records {
            let tag = u64::from(record.correlation_id);
            if self.awaited.contains(&tag) {
                self.arrived.entry(tag).or_insert(record.times);
            }
        }
    }

    /// The records CUPTI delivered since the last look.
    pub(crate) fn collect(&mut self) {
        if activity::enabled() {
            self.receive(activity::take());
        }
    }

    pub(crate) fn has(&self, tag: u64) -> bool {
        self.arrived.contains_key(&tag)
    }

    /// The record of `tag`, if it came (then no longer awaited).
    pub(crate) fn take(&mut self, tag: u64) -> Option<Option<(u64, u64)>> {
        let times = self.arrived.remove(&tag)?;
        self.awaited.remove(&tag);
        Some(times)
    }

    /// Waits for `tag`'s record: the current context is waited for (the kernel and all before
    /// it complete), then CUPTI is flushed until the record comes, at most [`RECORD_WAIT`].
    pub(crate) fn wait_for(
        &mut self,
        driver: &kreplay_cuda::Driver,
        tag: u64,
    ) -> Result<(), CudaError> {
        self.collect();
        if self.has(tag) {
            return Ok(());
        }
        kreplay_cuda::handles::synchronize_context(driver)?;
        let since = Instant::now();
        loop {
            activity::flush(false);
            self.collect();
            if self.has(tag) {
                return Ok(());
            }
            if since.elapsed() >= RECORD_WAIT {
                // The last chance: every buffer, complete or not.
                activity::flush(true);
                self.collect();
                if self.has(tag) {
                    return Ok(());
                }
                let dropped = activity::dropped();
                return Err(CudaError::Load(format!(
                    "CUPTI gave no record of a kernel's execution within {} s of its completion ({dropped} record(s) dropped); kernels are timed with events from now on",
                    RECORD_WAIT.as_secs()
                )));
            }
            std::thread::sleep(POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(correlation_id: u32, times: Option<(u64, u64)>) -> KernelTimes {
        KernelTimes {
            correlation_id,
            times,
        }
    }

    #[test]
    fn only_awaited_launches_keep_their_records_and_each_is_taken_once() {
        let mut inbox = Inbox::default();
        inbox.expect(7);
        inbox.expect(8);
        // A graph launch's kernels (timed with events) and a launch already read come too.
        inbox.receive([record(3, Some((1, 2))), record(7, Some((10, 20)))]);
        assert!(inbox.has(7) && !inbox.has(3) && !inbox.has(8));
        assert_eq!(inbox.take(7), Some(Some((10, 20))));
        assert_eq!(inbox.take(7), None);
        inbox.receive([record(7, Some((30, 40))), record(8, None)]);
        assert!(!inbox.has(7), "a launch read is no longer awaited");
        assert_eq!(inbox.take(8), Some(None));
    }

    #[test]
    fn a_record_that_comes_before_its_launch_is_issued_is_kept_and_a_forgotten_one_dropped() {
        let mut inbox = Inbox::default();
        inbox.expect(5);
        inbox.receive([record(5, Some((1, 9)))]);
        inbox.expect(6);
        inbox.forget(6);
        inbox.receive([record(6, Some((2, 3)))]);
        assert_eq!(inbox.take(5), Some(Some((1, 9))));
        assert!(!inbox.has(6));
    }
}
