//! A set of ids that are mostly dense (correlation ids: kreplay numbers them from 1), in about
//! a bit each where they are dense and two bytes each where they are not, rather than a hash
//! entry each: a traced run's writers keep such sets over millions of calls (issue 49).

use std::collections::BTreeMap;

/// Ids per page: the low 16 bits of an id are its place in its page.
const PAGE_BITS: u32 = 16;
/// A page's ids held in a list up to this many, then as a bitmap (both 8 KiB there).
const FEW: usize = 4096;

#[derive(Debug, Clone)]
enum Page {
    /// Sorted low bits.
    Few(Vec<u16>),
    /// A bit per low value.
    Bits(Box<[u64; 1 << (PAGE_BITS - 6)]>),
}

#[derive(Debug, Clone, Default)]
pub(crate) struct IdSet {
    pages: BTreeMap<u64, Page>,
}

impl IdSet {
    pub(crate) fn insert(&mut self, id: u64) {
        let low = id as u16;
        let page = (self.pages)
            .entry(id >> PAGE_BITS)
            .or_insert_with(|| Page::Few(Vec::new()));
        match page {
            Page::Few(few) => {
                if let Err(at) = few.binary_search(&low) {
                    few.insert(at, low);
                }
                if few.len() > FEW {
                    let mut bits = Box::new([0u64; 1 << (PAGE_BITS - 6)]);
                    for low in few.iter() {
                        bits[usize::from(*low) >> 6] |= 1 << (low & 63);
                    }
                    *page = Page::Bits(bits);
                }
            }
            Page::Bits(bits) => bits[usize::from(low) >> 6] |= 1 << (low & 63),
        }
    }

    pub(crate) fn contains(&self, id: u64) -> bool {
        let low = id as u16;
        match self.pages.get(&(id >> PAGE_BITS)) {
            None => false,
            Some(Page::Few(few)) => few.binary_search(&low).is_ok(),
            Some(Page::Bits(bits)) => bits[usize::from(low) >> 6] & (1 << (low & 63)) != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::IdSet;

    #[test]
    fn holds_dense_and_sparse_ids() {
        let mut set = IdSet::default();
        let ids: Vec<u64> = (1..20_000)
            .step_by(3)
            .chain([u64::MAX, 1 << 40, 70_000])
            .collect();
        for id in &ids {
            set.insert(*id);
        }
        for id in 0..25_000 {
            assert_eq!(set.contains(id), ids.contains(&id), "{id}");
        }
        assert!(set.contains(u64::MAX) && set.contains(1 << 40) && !set.contains((1 << 40) + 1));
    }
}
