//! Theoretical occupancy of a launch, as CUDA's occupancy calculator (`cuda_occupancy.h`)
//! computes it: how many blocks of the kernel fit on one SM by warps, blocks, registers and
//! shared memory, and what that makes of the SM's warps. For Nsight Compute's Occupancy and
//! Launch Statistics rows (`launch__occupancy_limit_*`, `sm__maximum_warps_per_active_cycle_pct`,
//! `launch__waves_per_multiprocessor`).
//!
//! Shared memory is counted against the SM's largest shared-memory configuration: Nsight Compute
//! shows the configuration the driver chose for the launch, so a kernel limited by shared memory
//! can show a different shared-memory block limit there (kreplay leaves that row `n/a`).

/// What one SM of a chip holds (CUDA's device attributes and allocation rules for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmLimits {
    pub max_warps: u32,
    pub max_blocks: u32,
    pub registers: u32,
    pub registers_per_block: u32,
    /// Registers are allocated per warp in units of this many.
    pub register_unit: u32,
    /// Register file partitions: each holds whole warps.
    pub sub_partitions: u32,
    pub max_registers_per_thread: u32,
    /// Nsight Compute shows no kernel with fewer registers per thread than this.
    pub min_registers_per_thread: u32,
    /// Bytes, the largest shared-memory configuration.
    pub shared_bytes: u32,
    /// Bytes the driver reserves in each block's shared memory.
    pub shared_reserved_per_block: u32,
    /// Shared memory is allocated per block in units of this many bytes.
    pub shared_unit: u32,
}

/// The limits of the chips kreplay knows them for (compute capability 9.0 and 8.0).
pub fn limits_of(chip: &str) -> Option<SmLimits> {
    let base = SmLimits {
        max_warps: 64,
        max_blocks: 32,
        registers: 65536,
        registers_per_block: 65536,
        register_unit: 256,
        sub_partitions: 4,
        max_registers_per_thread: 255,
        min_registers_per_thread: 16,
        shared_bytes: 0,
        shared_reserved_per_block: 1024,
        shared_unit: 128,
    };
    match chip.to_ascii_uppercase().as_str() {
        "GH100" => Some(SmLimits {
            shared_bytes: 228 << 10,
            ..base
        }),
        "GA100" => Some(SmLimits {
            shared_bytes: 164 << 10,
            ..base
        }),
        _ => None,
    }
}

/// The blocks of one launch that fit on an SM, by each limit, and the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occupancy {
    pub warps_per_block: u32,
    pub by_warps: u32,
    pub by_blocks: u32,
    pub by_registers: u32,
    pub by_shared: u32,
    /// The least of the four.
    pub blocks: u32,
    /// Warps the SM's most resident blocks hold, against its `max_warps`.
    pub max_warps: u32,
}

impl Occupancy {
    /// Theoretical occupancy, percent of the SM's warps.
    pub fn percent(&self) -> f64 {
        f64::from(self.blocks * self.warps_per_block) * 100.0 / f64::from(self.max_warps)
    }

    /// Theoretical active warps per SM.
    pub fn warps(&self) -> u32 {
        self.blocks * self.warps_per_block
    }
}

fn round_up(value: u64, unit: u64) -> u64 {
    value.div_ceil(unit.max(1)) * unit.max(1)
}

/// What Nsight Compute's "Registers Per Thread" shows for a kernel compiled to `registers`:
/// never fewer than the SM's minimum per thread (H200, 2026-12-01: kernels of 10, 14 and 15
/// registers show 16, cuBLAS's SGEMM of 202 shows 202).
pub fn shown_registers(limits: &SmLimits, registers: u32) -> u32 {
    registers.max(limits.min_registers_per_thread)
}

/// The occupancy of blocks of `threads` threads using `registers` registers per thread and
/// `shared` bytes of shared memory (static and dynamic); `None` for a block of no threads.
pub fn occupancy(
    limits: &SmLimits,
    threads: u32,
    registers: u32,
    shared: u32,
) -> Option<Occupancy> {
    if threads == 0 {
        return None;
    }
    let warps_per_block = threads.div_ceil(32);
    let by_warps = limits.max_warps / warps_per_block;
    let by_blocks = limits.max_blocks;
    let by_registers = if registers == 0 {
        u32::MAX
    } else if registers > limits.max_registers_per_thread {
        0
    } else {
        let per_warp = round_up(u64::from(registers) * 32, u64::from(limits.register_unit));
        let parts = u64::from(limits.sub_partitions.max(1));
        let block_warps = u64::from(warps_per_block).div_ceil(parts) * parts;
        if per_warp * block_warps > u64::from(limits.registers_per_block) {
            0
        } else {
            let warps_per_part = u64::from(limits.registers) / parts / per_warp;
            (warps_per_part * parts / u64::from(warps_per_block)) as u32
        }
    };
    let allocated = round_up(
        u64::from(shared) + u64::from(limits.shared_reserved_per_block),
        u64::from(limits.shared_unit),
    );
    let by_shared = (u64::from(limits.shared_bytes) / allocated.max(1)) as u32;
    let blocks = by_warps.min(by_blocks).min(by_registers).min(by_shared);
    Some(Occupancy {
        warps_per_block,
        by_warps,
        by_blocks,
        // A kernel without registers is not limited by them: shown as the block limit.
        by_registers: if registers == 0 {
            by_blocks
        } else {
            by_registers
        },
        by_shared,
        blocks,
        max_warps: limits.max_warps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gh100() -> SmLimits {
        limits_of("GH100").unwrap()
    }

    #[test]
    fn registers_per_thread_are_shown_as_nsight_compute_shows_them() {
        // H200, 2026-12-01, `ncu --metrics launch__registers_per_thread`.
        let limits = gh100();
        for (compiled, shown) in [(10, 16), (14, 16), (15, 16), (16, 16), (202, 202)] {
            assert_eq!(shown_registers(&limits, compiled), shown, "{compiled}");
        }
    }

    #[test]
    fn registers_are_allocated_per_warp_within_sub_partitions() {
        // 128 registers, 64 threads: 4096 per warp, 4 warps per sub-partition, 16 per SM: 8
        // blocks (cuda_occupancy.h's cudaOccMaxBlocksPerSMRegsLimit).
        let o = occupancy(&gh100(), 64, 128, 0).unwrap();
        assert_eq!((o.by_registers, o.blocks), (8, 8));
        assert_eq!(o.percent(), 25.0);
        // 40 registers, 32 threads: 1280 per warp, 12 warps per sub-partition, 48 per SM: 48
        // blocks by registers, 32 by the SM's block limit.
        let o = occupancy(&gh100(), 32, 40, 0).unwrap();
        assert_eq!((o.by_registers, o.blocks), (48, 32));
        // 32 registers, 256 threads: 1024 per warp, 16 per sub-partition, 64 warps: 8 blocks,
        // as the warp limit: 100 %.
        let o = occupancy(&gh100(), 256, 32, 0).unwrap();
        assert_eq!((o.by_registers, o.by_warps, o.blocks), (8, 8, 8));
        assert_eq!((o.percent(), o.warps()), (100.0, 64));
        // More registers than a thread may have: nothing fits.
        assert_eq!(occupancy(&gh100(), 32, 256, 0).unwrap().blocks, 0);
    }

    #[test]
    fn shared_memory_counts_the_reserve_in_allocation_units() {
        // 40000 B + 1024 reserved = 41024, in 128-byte units 41088: 233472 / 41088 = 5 blocks.
        let o = occupancy(&gh100(), 64, 16, 40000).unwrap();
        assert_eq!((o.by_shared, o.blocks), (5, 5));
        // No shared memory at all: the reserve alone, never the limit.
        let o = occupancy(&gh100(), 1024, 16, 0).unwrap();
        assert_eq!((o.by_warps, o.by_shared, o.blocks), (2, 228, 2));
    }

    #[test]
    fn only_known_chips_have_limits_and_empty_blocks_none() {
        assert!(limits_of("gh100").is_some() && limits_of("GA100").is_some());
        assert_eq!(limits_of("AD102"), None);
        assert_eq!(occupancy(&gh100(), 0, 32, 0), None);
    }
}
