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
mod tests {
    use super::*;

    fn region(device: DeviceId, base: u64, bytes: u64, kind: AllocKind) -> Region {
        Region {
            device,
            base,
            bytes,
            kind,
        }
    }

    #[test]
    fn tracked_regions_are_per_device_and_exclude_untracked_kinds() {
        let inventory = Inventory::new();
        inventory.insert(region(0, 0x1000, 256, AllocKind::Device));
        inventory.insert(region(0, 0x2000, 64, AllocKind::ModuleVariable));
        inventory.insert(region(0, 0x3000, 128, AllocKind::Host));
        inventory.insert(region(1, 0x1000, 512, AllocKind::Pitched));
        let device0: Vec<u64> = inventory.tracked(0).iter().map(|r| r.base).collect();
        assert_eq!(device0, vec![0x1000, 0x2000]);
        assert_eq!(inventory.tracked_bytes(0), 320);
        assert_eq!(inventory.tracked_bytes(1), 512);
        assert_eq!(inventory.untracked_kinds(), vec![AllocKind::Host]);
        assert_eq!(inventory.len(), 4);
    }

    #[test]
    fn find_returns_the_containing_region_only() {
        let inventory = Inventory::new();
        inventory.insert(region(0, 0x1000, 0x100, AllocKind::Device));
        assert_eq!(inventory.find(0, 0x10ff).map(|r| r.base), Some(0x1000));
        assert_eq!(inventory.find(0, 0x1100), None);
        assert_eq!(inventory.find(0, 0xfff), None);
        assert_eq!(inventory.find(1, 0x1000), None);
    }

    #[test]
    fn remove_forgets_and_unknown_base_is_none() {
        let inventory = Inventory::new();
        inventory.insert(region(0, 0x1000, 0x100, AllocKind::Device));
        assert_eq!(inventory.remove(0, 0x1080), None);
        assert!(inventory.remove(0, 0x1000).is_some());
        assert!(inventory.is_empty());
        assert!(inventory.untracked_kinds().is_empty());
    }

    #[test]
    fn an_unmap_forgets_every_mapping_inside_its_range() {
        let inventory = Inventory::new();
        for base in [0x10_000, 0x12_000, 0x14_000, 0x20_000] {
            inventory.insert(region(0, base, 0x2000, AllocKind::VirtualMapping));
        }
        let before = inventory.generation();
        assert_eq!(inventory.remove_within(0, 0x10_000, 0x6000), 3);
        assert!(inventory.generation() > before);
        let bases: Vec<u64> = inventory.tracked(0).iter().map(|r| r.base).collect();
        assert_eq!(
            bases,
            vec![0x20_000],
            "mappings are tracked; the one outside stays"
        );
        assert_eq!(inventory.remove_within(1, 0, u64::MAX), 0, "no such device");
    }

    #[test]
    fn an_overlapping_insert_replaces_stale_regions() {
        let inventory = Inventory::new();
        inventory.insert(region(0, 0x1000, 0x100, AllocKind::Device));
        inventory.insert(region(0, 0x1200, 0x100, AllocKind::Device));
        inventory.insert(region(0, 0x1400, 0x100, AllocKind::Device));
        let stale = inventory.insert(region(0, 0x10f0, 0x200, AllocKind::Device));
        let mut stale_bases: Vec<u64> = stale.iter().map(|r| r.base).collect();
        stale_bases.sort();
        assert_eq!(stale_bases, vec![0x1000, 0x1200]);
        let bases: Vec<u64> = inventory.tracked(0).iter().map(|r| r.base).collect();
        assert_eq!(bases, vec![0x10f0, 0x1400]);
        // Adjacent, not overlapping: nothing dropped.
        assert!(inventory
            .insert(region(0, 0x1500, 0x10, AllocKind::Device))
            .is_empty());
    }
}
