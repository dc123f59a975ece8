//! A new unit's S0: the tracked memory staged (device or host) after the drain, or why the
//! dispatch runs once instead.

use super::hold::Refused;
use super::*;
use crate::engine::sys::elapsed_ns;

impl<K: Backend> Engine<K> {
    /// S0, the snapshot of the device's tracked memory a unit that restores starts from (none
    /// when it does not restore, or nothing is tracked), staged on the device while that leaves
    /// the reserve free and on the host otherwise; on failure the hold is given back first.
    pub(super) fn staged<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        device: DeviceId,
        hold: ExclusiveHold,
        restorable: bool,
    ) -> Result<(ExclusiveHold, Staged<K::Snapshot>), Refused> {
        // Read before the regions: a change in between makes a later comparison fail, never pass.
        let inventory_generation = self.inventory.generation();
        let regions = self.inventory.tracked(device);
        let bytes_tracked: u64 = regions.iter().map(|r| r.bytes).sum();
        let snapshot_started = Instant::now();
        // No tracked byte on the device: nothing to stage, every restore would be empty
        // (untracked kinds are never restored anyway).
        let (snapshot, staging) = if regions.is_empty() || !restorable {
            (None, Staging::None)
        } else {
            match self.snapshot_staged(backend, device, &regions, bytes_tracked) {
                Ok(Some((staged, place))) => (Some(staged), place),
                Ok(None) => {
                    drop(hold);
                    self.too_large_notice(bytes_tracked);
                    return Err((ReplayOutcome::DeclinedSnapshotTooLarge, bytes_tracked));
                }
                Err(error) => {
                    drop(hold);
                    self.backend_notice("snapshot", &error);
                    return Err((ReplayOutcome::DeclinedError, bytes_tracked));
                }
            }
        };
        let snapshot_ns = elapsed_ns(snapshot_started);
        // F, the application's view when the unit closes, is staged on the device too.
        let undeferrable = if !restorable || regions.is_empty() {
            None
        } else if staging != Staging::Device {
            Some("its snapshot is staged on the host")
        } else if backend
            .device_free_bytes(device)
            .saturating_sub(self.options.staging_reserve_bytes)
            < bytes_tracked
        {
            Some(super::UNDEFERRABLE_STAGING)
        } else {
            None
        };
        Ok((
            hold,
            Staged {
                snapshots: Snapshots {
                    host_writable: restorable
                        && regions.iter().any(|r| r.kind == AllocKind::Managed),
                    taken: snapshot.into_iter().collect(),
                    covered: regions,
                    staging,
                    bytes_tracked,
                    inventory_generation,
                },
                undeferrable,
                snapshot_ns,
            },
        ))
    }

    /// Said once the replay is certain (several executions): memory that is not restored
    /// matters only then.
    pub(super) fn notice_untracked_kinds(&self) {
        for kind in self.inventory.untracked_kinds() {
            self.notice(
                &format!("untracked-{kind:?}"),
                &format!(
                    "{} is not restored between replay passes; kernels that write it see their own earlier passes' writes",
                    kind.describe()
                ),
            );
        }
    }
}

/// A new unit's S0 and what its staging decided.
pub(super) struct Staged<S> {
    pub(super) snapshots: Snapshots<S>,
    /// As [`Spans::undeferrable`], as far as staging decides: F fits device staging.
    pub(super) undeferrable: Option<&'static str>,
    pub(super) snapshot_ns: u64,
}
