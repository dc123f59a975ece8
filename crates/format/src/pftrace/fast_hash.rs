//! A hasher for the writer's small integer keys (tracks, kernels): one multiply per integer
//! where the standard SipHash takes tens of nanoseconds, looked up millions of times (issue 49).
//! The keys are the run's own ids, not chosen by an adversary.

use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` keyed by integers or tuples of them, with [`IdHasher`].
pub(super) type IdMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// Mixes each integer in with a multiply by an odd constant (FxHash's).
#[derive(Default)]
pub(super) struct IdHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u8(&mut self, value: u8) {
        self.write_u64(u64::from(value));
    }

    fn write_u32(&mut self, value: u32) {
        self.write_u64(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(SEED);
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
}
