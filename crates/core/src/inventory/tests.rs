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
