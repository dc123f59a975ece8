//! F: the application's view of tracked memory, saved before a unit's later executions and
//! put back after them.

use super::executions::Replay;
use super::job::UnitJob;
use super::*;
use crate::engine::sys::elapsed_ns;

impl<K: Backend> Engine<K> {
    /// Saves F, every tracked region as the application sees it, before the later executions;
    /// false (said once) when it cannot be staged: the unit then ends with execution 0, whose
    /// results the application already has. Also when the unit stayed open across no call but
    /// S0 holds managed memory: the host may have written it while a member ran or between
    /// members, and what members computed from those writes (in any tracked memory) is the
    /// application's, which the later executions, run without them, would not reproduce.
    pub(super) fn save_view<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        job: &UnitJob<'_, K>,
        replay: &mut Replay<K::Snapshot>,
    ) -> bool {
        let regions = self.inventory.tracked(job.device);
        if regions.is_empty() {
            return true;
        }
        let bytes: u64 = regions.iter().map(|r| r.bytes).sum();
        let started = Instant::now();
        match self.snapshot_staged(backend, job.device, &regions, bytes) {
            Ok(Some((view, _))) => {
                replay.view = Some(view);
                replay.cost.bytes_snapshotted += bytes;
                replay.cost.snapshot_ns += elapsed_ns(started);
                true
            }
            Ok(None) => {
                self.unit_counters_notice(
                    "the memory the application saw could not be staged before the later passes",
                );
                false
            }
            Err(error) => {
                self.backend_notice("snapshot", &error);
                false
            }
        }
    }

    /// Restores F after the later executions (or after one failed).
    pub(super) fn put_back_view<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        job: &UnitJob<'_, K>,
        view: K::Snapshot,
        replay: &mut Replay<K::Snapshot>,
    ) {
        let started = Instant::now();
        match backend.restore(&view) {
            Ok(bytes) => replay.cost.bytes_restored += bytes,
            Err(error) => self.fatal(&format!(
                "putting back device {} memory after the replay window of dispatches {} failed ({error}); the application's memory can no longer be trusted",
                job.device,
                job.describe()
            )),
        }
        replay.cost.restore_ns += elapsed_ns(started);
        backend.release(view);
    }
}
