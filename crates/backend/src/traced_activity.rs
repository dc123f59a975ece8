//! Kernel launches timed without waiting through CUPTI's records of their executions
//! (`kreplay_cuda::activity`): the launches whose records are awaited, by correlation id, and the
//! records that came for them. A record only ever comes once the kernel has run, and is taken
//! off CUPTI at a flush (the reader thread's, every millisecond, or a wait's here).

use kreplay_core::backend::DeviceId;
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

/// A record's start and end on the host clock (`None`: CUPTI gave it without times).
pub(crate) type RecordTimes = Option<(u64, u64)>;

/// The launches awaiting their records (by tag: the launch call's correlation id) and the
/// records already come (`None`: CUPTI gave it without times).
#[derive(Default)]
pub(crate) struct Inbox {
    awaited: HashSet<u64>,
    arrived: HashMap<u64, RecordTimes>,
    /// Launches issued in a context since destroyed, in issue order: their records still come
    /// (nothing is waited for inside the driver's callback of the destruction).
    detached: Vec<(DeviceId, u64)>,
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
    pub(crate) fn take(&mut self, tag: u64) -> Option<RecordTimes> {
        let times = self.arrived.remove(&tag)?;
        self.awaited.remove(&tag);
        Some(times)
    }

    /// The launches of `device` issued in its context, which is being destroyed.
    pub(crate) fn detach(&mut self, device: DeviceId, tags: impl IntoIterator<Item = u64>) {
        self.detached
            .extend(tags.into_iter().map(|tag| (device, tag)));
    }

    /// The records come of `device`'s launches issued in a context since destroyed, oldest
    /// first; with `finish` (the end of the process, on a thread of its own) every one, their
    /// records awaited at most [`RECORD_WAIT`] (the context's work is over) and those that never
    /// came said so.
    pub(crate) fn take_detached(
        &mut self,
        device: DeviceId,
        finish: bool,
    ) -> Vec<(u64, Result<RecordTimes, CudaError>)> {
        let mine = |inbox: &Inbox| -> Vec<u64> {
            inbox
                .detached
                .iter()
                .filter(|(d, _)| *d == device)
                .map(|(_, tag)| *tag)
                .collect()
        };
        if mine(self).is_empty() {
            return Vec::new();
        }
        if finish {
            self.await_records(true, |inbox| mine(inbox).iter().all(|t| inbox.has(*t)));
        }
        self.collect();
        let mut read = Vec::new();
        let detached = std::mem::take(&mut self.detached);
        for (d, tag) in detached {
            if d != device || !(finish || self.has(tag)) {
                self.detached.push((d, tag));
                continue;
            }
            let times = self.take(tag).ok_or_else(|| {
                CudaError::Load(format!(
                    "CUPTI gave no record of launch {tag}'s execution, whose context went away"
                ))
            });
            self.forget(tag);
            read.push((tag, times));
        }
        read
    }

    /// Waits for `tag`'s record: the current context is waited for (the kernel and all before
    /// it complete), then the record, at most [`RECORD_WAIT`], taken off CUPTI by this thread
    /// with `flush` (not inside a CUPTI callback: there the reader thread's flushes bring it).
    pub(crate) fn wait_for(
        &mut self,
        driver: &kreplay_cuda::Driver,
        tag: u64,
        flush: bool,
    ) -> Result<(), CudaError> {
        self.collect();
        if self.has(tag) {
            return Ok(());
        }
        kreplay_cuda::handles::synchronize_context(driver)?;
        if self.await_records(flush, |inbox| inbox.has(tag)) {
            return Ok(());
        }
        let dropped = activity::dropped();
        Err(CudaError::Load(format!(
            "CUPTI gave no record of a kernel's execution within {} s of its completion ({dropped} record(s) dropped); kernels are timed with events from now on",
            RECORD_WAIT.as_secs()
        )))
    }

    /// Collects records until `done`, at most [`RECORD_WAIT`], flushing CUPTI on this thread
    /// with `flush`. Never a forced flush: it would hand over, without their times, the records
    /// of kernels still running elsewhere (on another device).
    fn await_records(&mut self, flush: bool, done: impl Fn(&Inbox) -> bool) -> bool {
        let since = Instant::now();
        loop {
            if flush {
                activity::flush();
            }
            self.collect();
            if done(self) {
                return true;
            }
            if since.elapsed() >= RECORD_WAIT {
                return false;
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
    fn launches_of_a_destroyed_context_are_read_as_their_records_come_and_said_at_the_end() {
        let mut inbox = Inbox::default();
        for tag in [1, 2, 3] {
            inbox.expect(tag);
        }
        inbox.detach(0, [1, 2]);
        inbox.detach(1, [3]);
        inbox.receive([record(2, Some((5, 6)))]);
        let read = inbox.take_detached(0, false);
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].0, 2);
        assert_eq!(read[0].1.as_ref().ok(), Some(&Some((5, 6))));
        // At the end, the one whose record never came is said so; device 1's stay.
        let read = inbox.take_detached(0, true);
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].0, 1);
        assert!(read[0].1.is_err());
        assert_eq!(inbox.detached, vec![(1, 3)]);
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
