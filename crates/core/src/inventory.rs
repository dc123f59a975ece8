//! The allocation inventory: every live allocation of the process, per device, as an interval map.
//!
//! Backends insert a [`Region`] when the application allocates (or a module variable appears) and
//! remove it when it is freed. Snapshots cover the tracked kinds ([`AllocKind::is_tracked`]) of
//! the dispatch's device; the untracked kinds are only counted so that the engine can say once per
//! process that such memory is not restored.

use crate::backend::{AllocKind, DeviceId, Region};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

/// Live allocations, keyed by device then base address. Shared by all application threads.
#[derive(Debug, Default)]
pub struct Inventory {
    devices: RwLock<HashMap<DeviceId, BTreeMap<u64, Region>>>,
    /// Bumped by every change, so that a replay window can tell whether the snapshot it took
    /// still covers every tracked region (a module variable resolved at a kernel's first launch
    /// appears between two launches with no other CUDA call in between).
    generation: AtomicU64,
}

impl Inventory {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a new allocation. Regions it overlaps are stale (their free was missed, e.g. an
    /// allocation made before the tool attached) and are dropped; they are returned so the
    /// caller can log them. Empty regions are ignored.
    pub fn insert(&self, region: Region) -> Vec<Region> {
        if region.bytes == 0 {
            return Vec::new();
        }
        let mut devices = self.devices.write().unwrap_or_else(|e| e.into_inner());
        let map = devices.entry(region.device).or_default();
        let end = region.base.saturating_add(region.bytes);
        let overlapping: Vec<u64> = map
            .range(..end)
            .rev()
            .take_while(|(_, r)| r.base.saturating_add(r.bytes) > region.base)
            .map(|(base, _)| *base)
            .collect();
        let stale = overlapping
            .into_iter()
            .filter_map(|base| map.remove(&base))
            .collect();
        map.insert(region.base, region);
        self.generation.fetch_add(1, Ordering::AcqRel);
        stale
    }

    /// Changes with every insert and every remove that found its region.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Forgets the allocation that starts at `base` on `device`; `None` if none does.
    pub fn remove(&self, device: DeviceId, base: u64) -> Option<Region> {
        let mut devices = self.devices.write().unwrap_or_else(|e| e.into_inner());
        let removed = devices.get_mut(&device)?.remove(&base);
        if removed.is_some() {
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
        removed
    }

    /// Forgets the allocation that starts at `base` on `device` if it is of `kind` (a module's
    /// variable must not take an allocation that reused its address with it).
    pub fn remove_of_kind(&self, device: DeviceId, base: u64, kind: AllocKind) -> Option<Region> {
        let mut devices = self.devices.write().unwrap_or_else(|e| e.into_inner());
        let map = devices.get_mut(&device)?;
        if map.get(&base)?.kind != kind {
            return None;
        }
        let removed = map.remove(&base);
        self.generation.fetch_add(1, Ordering::AcqRel);
        removed
    }

    /// Forgets every allocation that starts inside `[base, base + bytes)` on `device` (an
    /// unmap of several mappings at once); returns how many.
    pub fn remove_within(&self, device: DeviceId, base: u64, bytes: u64) -> usize {
        let mut devices = self.devices.write().unwrap_or_else(|e| e.into_inner());
        let Some(map) = devices.get_mut(&device) else {
            return 0;
        };
        let inside: Vec<u64> = map
            .range(base..base.saturating_add(bytes.max(1)))
            .map(|(b, _)| *b)
            .collect();
        for b in &inside {
            map.remove(b);
        }
        if !inside.is_empty() {
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
        inside.len()
    }

    /// The allocation containing `address` on `device`.
    pub fn find(&self, device: DeviceId, address: u64) -> Option<Region> {
        let devices = self.devices.read().unwrap_or_else(|e| e.into_inner());
        let (_, region) = devices.get(&device)?.range(..=address).next_back()?;
        (address < region.base.saturating_add(region.bytes)).then_some(*region)
    }

    /// The allocation containing `address` on any device (host memory is recorded under the
    /// device whose context allocated it, and is visible to all).
    pub fn find_anywhere(&self, address: u64) -> Option<Region> {
        let devices = self.devices.read().unwrap_or_else(|e| e.into_inner());
        devices.values().find_map(|map| {
            let (_, region) = map.range(..=address).next_back()?;
            (address < region.base.saturating_add(region.bytes)).then_some(*region)
        })
    }

    /// The devices that have live allocations.
    pub fn devices(&self) -> Vec<DeviceId> {
        let devices = self.devices.read().unwrap_or_else(|e| e.into_inner());
        devices
            .iter()
            .filter(|(_, map)| !map.is_empty())
            .map(|(device, _)| *device)
            .collect()
    }

    /// The regions a snapshot of `device` covers, in address order.
    pub fn tracked(&self, device: DeviceId) -> Vec<Region> {
        let devices = self.devices.read().unwrap_or_else(|e| e.into_inner());
        devices
            .get(&device)
            .map(|map| {
                map.values()
                    .filter(|r| r.kind.is_tracked())
                    .copied()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Bytes of tracked memory on `device`.
    pub fn tracked_bytes(&self, device: DeviceId) -> u64 {
        let devices = self.devices.read().unwrap_or_else(|e| e.into_inner());
        devices
            .get(&device)
            .map(|map| {
                map.values()
                    .filter(|r| r.kind.is_tracked())
                    .map(|r| r.bytes)
                    .sum()
            })
            .unwrap_or(0)
    }

    /// The untracked kinds with at least one live allocation, on any device (host memory is
    /// visible to every device, so the notice does not depend on the dispatch's device).
    pub fn untracked_kinds(&self) -> Vec<AllocKind> {
        let devices = self.devices.read().unwrap_or_else(|e| e.into_inner());
        let mut kinds: Vec<AllocKind> = devices
            .values()
            .flat_map(|map| map.values())
            .filter(|r| !r.kind.is_tracked())
            .map(|r| r.kind)
            .collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }

    /// Number of live allocations on every device together.
    pub fn len(&self) -> usize {
        let devices = self.devices.read().unwrap_or_else(|e| e.into_inner());
        devices.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
