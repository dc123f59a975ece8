//! A reorder window for items that come nearly in key order: up to a fixed count of items wait,
//! sorted, and the least comes out when it is full. The items come out in the order a full
//! sort would give as long as none comes after an item with a greater key came out; one that
//! does is refused ([`NotOrdered`]) and the caller falls back to the external sort
//! ([`crate::spill`]). Memory: the window's items, whatever the input's length.

use std::collections::VecDeque;
use std::io;

/// An item came after one with a greater key had left the window.
#[derive(Debug)]
pub(super) struct NotOrdered;

/// The error a refused item gives as it unwinds an `io::Result` chain.
pub(super) fn not_ordered() -> io::Error {
    io::Error::other(NotOrdered)
}

impl std::fmt::Display for NotOrdered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("records too far out of order for the reorder window")
    }
}

impl std::error::Error for NotOrdered {}

/// Whether `error` is [`not_ordered`]'s.
pub(super) fn is_not_ordered(error: &io::Error) -> bool {
    error
        .get_ref()
        .is_some_and(|inner| inner.downcast_ref::<NotOrdered>().is_some())
}

/// How many places, on average over the items pushed, items out of order may jump back before
/// the window gives up ([`NotOrdered`]): the work stays linear in the input.
const MOVES_PER_ITEM: u64 = 64;

/// How many items from the end an item out of order is first looked for among, one by one.
const NEAR: usize = 8;

/// What a window's items carry: bytes (an encoded event), or a record held as it is.
pub(super) trait Payload: Default {
    /// Made ready to be written into again.
    fn clear(&mut self) {}

    /// Brought into the processor's cache ahead of its reading, where it lies apart from the
    /// window's items.
    fn prefetch(&self) {}
}

impl Payload for Vec<u8> {
    fn clear(&mut self) {
        Vec::clear(self)
    }

    fn prefetch(&self) {
        prefetch(self)
    }
}

/// Items (keys and payloads) in key order, least first; most come after all those waiting and
/// join the end, the others are put in place. The payloads stay where they were put (a pass's
/// record is a few hundred bytes): what moves is keys and places.
pub(super) struct Window<K, P = Vec<u8>> {
    /// The keys in order, each with its payload's place in `payloads`.
    items: VecDeque<(K, usize)>,
    payloads: Vec<P>,
    /// Places in `payloads` free for the next items.
    free: Vec<usize>,
    capacity: usize,
    /// The key of the last item out.
    last: Option<K>,
    /// Payloads of items gone out, for the next ones.
    spare: Vec<P>,
    pushed: u64,
    moved: u64,
}

impl<K: Ord + Copy, P: Payload> Window<K, P> {
    pub(super) fn new(capacity: usize) -> Self {
        Window {
            items: VecDeque::with_capacity(capacity + 1),
            payloads: Vec::new(),
            free: Vec::new(),
            capacity,
            last: None,
            spare: Vec::new(),
            pushed: 0,
            moved: 0,
        }
    }

    /// An empty payload (one an item gone out held).
    pub(super) fn buffer(&mut self) -> P {
        let mut buffer = self.spare.pop().unwrap_or_default();
        buffer.clear();
        buffer
    }

    /// Gives back a payload.
    pub(super) fn recycle(&mut self, buffer: P) {
        self.spare.push(buffer);
    }

    /// Adds an item; refuses it if an item with a greater key is already out, or if items out
    /// of order jumped back too far in all.
    pub(super) fn push(&mut self, key: K, payload: P) -> io::Result<()> {
        if self.last.is_some_and(|last| key < last) {
            return Err(not_ordered());
        }
        self.pushed += 1;
        match self.items.back() {
            Some((back, _)) if key < *back => {
                // Most such items belong a few places from the end.
                let near = self.items.len().saturating_sub(NEAR);
                let at = match self.items[near].0 <= key {
                    true => (near..self.items.len())
                        .rev()
                        .find(|&i| self.items[i].0 <= key)
                        .map_or(near, |i| i + 1),
                    false => self.items.partition_point(|(k, _)| *k <= key),
                };
                self.moved += (self.items.len() - at) as u64;
                if self.moved > MOVES_PER_ITEM * self.pushed + self.capacity as u64 {
                    return Err(not_ordered());
                }
                let place = self.place(payload);
                self.items.insert(at, (key, place));
            }
            _ => {
                let place = self.place(payload);
                self.items.push_back((key, place));
            }
        }
        Ok(())
    }

    /// Puts `payload` in a free place; returns it.
    fn place(&mut self, payload: P) -> usize {
        match self.free.pop() {
            Some(place) => {
                self.payloads[place] = payload;
                place
            }
            None => {
                self.payloads.push(payload);
                self.payloads.len() - 1
            }
        }
    }

    pub(super) fn is_full(&self) -> bool {
        self.items.len() >= self.capacity
    }

    /// The least item, out of the window.
    pub(super) fn pop(&mut self) -> Option<(K, P)> {
        let (key, place) = self.items.pop_front()?;
        self.last = Some(key);
        let payload = std::mem::take(&mut self.payloads[place]);
        self.free.push(place);
        if let Some(&(_, ahead)) = self.items.get(FETCH_AHEAD) {
            self.payloads[ahead].prefetch();
        }
        Some((key, payload))
    }
}

/// How many items after the one leaving the window have their payload fetched into the cache:
/// the payloads lie apart in memory, which the window (megabytes) outgrows, and each is read
/// as its item leaves.
const FETCH_AHEAD: usize = 8;

/// Asks the processor to bring `bytes` (their first 512) into its cache ahead of their reading.
#[cfg(target_arch = "x86_64")]
#[allow(unused_unsafe)]
fn prefetch(bytes: &[u8]) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    for line in bytes.chunks(64).take(8) {
        // SAFETY: a prefetch is a hint: it reads nothing into the program and cannot fault.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn prefetch(_: &[u8]) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(capacity: usize, keys: &[u8]) -> io::Result<Vec<u8>> {
        let mut window = Window::<u8>::new(capacity);
        let mut out = Vec::new();
        for &key in keys {
            window.push(key, vec![key])?;
            if window.is_full() {
                out.push(window.pop().unwrap().1[0]);
            }
        }
        while let Some((_, payload)) = window.pop() {
            out.push(payload[0]);
        }
        Ok(out)
    }

    #[test]
    fn nearly_ordered_items_come_out_sorted_and_one_too_late_is_refused() {
        assert_eq!(through(3, &[2, 1, 3, 5, 4, 6]).unwrap(), [1, 2, 3, 4, 5, 6]);
        let late = through(2, &[5, 6, 7, 1]).unwrap_err();
        assert!(is_not_ordered(&late));
        assert!(!is_not_ordered(&io::Error::other("other")));
    }

    #[test]
    fn many_items_far_out_of_order_are_refused_however_large_the_window() {
        let mut window = Window::<u16>::new(4000);
        for key in 1000..2000 {
            window.push(key, Vec::new()).unwrap();
        }
        let refused = (0..1000u16)
            .rev()
            .map(|key| window.push(key, Vec::new()))
            .find_map(Result::err)
            .expect("refused");
        assert!(is_not_ordered(&refused));
    }
}
