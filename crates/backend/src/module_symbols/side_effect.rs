//! The side effects a kernel's calls can have that a replay would repeat or break, and the
//! driver-resolved device functions that have them.

use std::collections::BTreeSet;
use std::fmt;

/// Something a kernel can do that restoring device memory does not undo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SideEffect {
    /// Device `printf` (`vprintf`): every pass prints again.
    DevicePrintf,
    /// Device heap (`malloc`/`free`, `new`/`delete`): the heap's state is not restored, so a
    /// second pass can fail (`CUDA_ERROR_INVALID_PC`) or leak.
    DeviceHeap,
    /// `assert` (`__assertfail`): prints the failed assertion, and traps.
    Assert,
}

impl SideEffect {
    pub const ALL: [SideEffect; 3] = [
        SideEffect::DevicePrintf,
        SideEffect::DeviceHeap,
        SideEffect::Assert,
    ];

    /// The side effect of calling the undefined (driver-resolved) device function `name`.
    pub fn of_external(name: &str) -> Option<SideEffect> {
        match name {
            "vprintf" | "printf" => Some(SideEffect::DevicePrintf),
            "__assertfail" | "__assert_fail" => Some(SideEffect::Assert),
            "malloc"
            | "free"
            | "__nv_aligned_device_malloc"
            | "__cuda_syscall_aligned_malloc"
            | "cudaMalloc"
            | "cudaFree" => Some(SideEffect::DeviceHeap),
            // operator new, new[], delete, delete[] in all their overloads.
            _ if ["_Znw", "_Zna", "_Zdl", "_Zda"]
                .iter()
                .any(|p| name.starts_with(p)) =>
            {
                Some(SideEffect::DeviceHeap)
            }
            _ => None,
        }
    }

    /// The effect's bit in a set of effects (a `u8`).
    pub(super) fn bit(self) -> u8 {
        1 << self as u8
    }

    /// The effects of a set of bits.
    pub(super) fn set_of(bits: u8) -> BTreeSet<SideEffect> {
        Self::ALL
            .into_iter()
            .filter(|e| bits & e.bit() != 0)
            .collect()
    }
}

impl fmt::Display for SideEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SideEffect::DevicePrintf => "device printf",
            SideEffect::DeviceHeap => "device heap",
            SideEffect::Assert => "device assert",
        })
    }
}
