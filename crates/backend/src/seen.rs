//! What a device's unit ran under so far: how many of its measured launches had L2 flushed
//! before them, and the range of the clocks read around its executions.

use kreplay_core::backend::UnitConditions;
use kreplay_format::CacheState;

/// What a device's unit has seen so far.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    pub(crate) flushed: u32,
    pub(crate) unflushed: u32,
    pub(crate) sm_mhz: Option<[u32; 2]>,
    pub(crate) memory_mhz: Option<[u32; 2]>,
}

impl Seen {
    /// Adds what `other` saw (a later part of the same unit).
    pub(crate) fn merge(&mut self, other: Seen) {
        self.flushed += other.flushed;
        self.unflushed += other.unflushed;
        for (range, other) in [
            (&mut self.sm_mhz, other.sm_mhz),
            (&mut self.memory_mhz, other.memory_mhz),
        ] {
            if let Some([low, high]) = other {
                widen(range, low);
                widen(range, high);
            }
        }
    }

    /// The conditions of a unit that saw this.
    pub(crate) fn conditions(self) -> UnitConditions {
        UnitConditions {
            cache: if self.flushed > 0 && self.unflushed == 0 {
                CacheState::Flushed
            } else {
                CacheState::AsLeft
            },
            sm_clock_mhz: self.sm_mhz.unwrap_or_default(),
            memory_clock_mhz: self.memory_mhz.unwrap_or_default(),
        }
    }
}

/// Widens `range` to hold `value`.
pub(crate) fn widen(range: &mut Option<[u32; 2]>, value: u32) {
    let [low, high] = range.get_or_insert([value, value]);
    *low = (*low).min(value);
    *high = (*high).max(value);
}
