//! What a unit's later executions work on: its members, log, snapshots, and which launches ran.

use super::*;
use std::cell::Cell;

/// What a unit's later executions work on.
pub(super) struct UnitJob<'a, K: Backend> {
    pub(super) device: DeviceId,
    pub(super) members: &'a [Member<K::Launch>],
    pub(super) log: &'a [LogEntry<K::Capture>],
    /// The last member's launch when it has no kept copy.
    pub(super) current: Option<&'a K::Launch>,
    /// Indices of the members whose launch executed.
    pub(super) live: &'a [usize],
    /// What each later execution restores first (the unit's `snapshots`, in reverse order).
    pub(super) snapshots: &'a [K::Snapshot],
    /// A pass's records were sent.
    pub(super) sent: Cell<bool>,
}

impl<K: Backend> UnitJob<'_, K> {
    /// The stream of each member whose launch executed, in their order.
    pub(super) fn live_streams(&self) -> Vec<u64> {
        self.live
            .iter()
            .map(|&i| self.members[i].dispatch.info.stream_id)
            .collect()
    }

    /// `first..last` dispatch ids, for messages.
    pub(super) fn describe(&self) -> String {
        let ids: Vec<u64> = self
            .live
            .iter()
            .map(|&i| self.members[i].dispatch.dispatch_id)
            .collect();
        match (ids.first(), ids.last()) {
            (Some(first), Some(last)) if ids.len() > 1 => format!("{first}..{last}"),
            (Some(only), _) => only.to_string(),
            _ => "(none)".to_string(),
        }
    }
}
