//! The workload's kernels and how each is launched.

use crate::device::{KernelContext, SimKernel, SimLaunch};

/// Threads per block of every launch.
const BLOCK: u32 = 256;

/// `x[i] = x[i] * mul + add` (wrapping).
pub fn scale_add_kernel() -> SimKernel {
    SimKernel::new(
        1,
        "_Z9scale_addPjjjj",
        "scale_add(unsigned int*, unsigned int, unsigned int, unsigned int)",
        |k: &mut KernelContext<'_>| {
            let (x, n, mul, add) = (k.arg(0), k.arg(1), k.arg(2) as u32, k.arg(3) as u32);
            for i in 0..n {
                let v = k.read_u32(x + 4 * i);
                k.write_u32(x + 4 * i, v.wrapping_mul(mul).wrapping_add(add));
            }
            k.count_instructions(n.div_ceil(32) * 4);
        },
    )
}

/// `dst[i] += src[i]` (wrapping).
pub fn accumulate_kernel() -> SimKernel {
    SimKernel::new(
        2,
        "_Z10accumulatePjPKjj",
        "accumulate(unsigned int*, unsigned int const*, unsigned int)",
        |k: &mut KernelContext<'_>| {
            let (dst, src, n) = (k.arg(0), k.arg(1), k.arg(2));
            for i in 0..n {
                let a = k.read_u32(dst + 4 * i);
                let b = k.read_u32(src + 4 * i);
                k.write_u32(dst + 4 * i, a.wrapping_add(b));
            }
            k.count_instructions(n.div_ceil(32) * 5);
        },
    )
}

/// `*counter += 1`, by one thread: a module variable counting launches.
pub fn bump_counter_kernel() -> SimKernel {
    SimKernel::new(
        3,
        "_Z12bump_counterv",
        "bump_counter()",
        |k: &mut KernelContext<'_>| {
            let counter = k.arg(0);
            let v = k.read_u32(counter);
            k.write_u32(counter, v.wrapping_add(1));
            k.count_instructions(3);
        },
    )
}

/// `x[i] ^= rotl(x[(i + 1) % n], 5)` with every read before any write: each element depends on
/// its neighbour's previous value.
pub fn neighbor_mix_kernel() -> SimKernel {
    SimKernel::new(
        4,
        "_Z12neighbor_mixPjj",
        "neighbor_mix(unsigned int*, unsigned int)",
        |k: &mut KernelContext<'_>| {
            let (x, n) = (k.arg(0), k.arg(1));
            let old: Vec<u32> = (0..n).map(|i| k.read_u32(x + 4 * i)).collect();
            for i in 0..n as usize {
                let next = old[(i + 1) % old.len()];
                k.write_u32(x + 4 * i as u64, old[i] ^ next.rotate_left(5));
            }
            k.count_instructions(n.div_ceil(32) * 6);
        },
    )
}

/// `m[i] += 1` on managed memory.
pub fn managed_touch_kernel() -> SimKernel {
    SimKernel::new(
        5,
        "_Z13managed_touchPjj",
        "managed_touch(unsigned int*, unsigned int)",
        |k: &mut KernelContext<'_>| {
            let (m, n) = (k.arg(0), k.arg(1));
            for i in 0..n {
                let v = k.read_u32(m + 4 * i);
                k.write_u32(m + 4 * i, v.wrapping_add(1));
            }
            k.count_instructions(n.div_ceil(32) * 3);
        },
    )
}

pub fn launch(kernel: &SimKernel, threads: u32, args: Vec<u64>) -> SimLaunch {
    SimLaunch {
        kernel: kernel.clone(),
        grid: [threads.div_ceil(BLOCK).max(1), 1, 1],
        block: [BLOCK, 1, 1],
        args,
        device: 0,
    }
}
