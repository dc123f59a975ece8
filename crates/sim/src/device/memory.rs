//! The device's memory as the application sees it: allocation, copies, reads and writes.

use super::*;

impl SimDevice {
    /// Allocates `bytes` (zeroed) of `kind`, returns the region to put in the inventory.
    pub fn alloc(&mut self, kind: AllocKind, bytes: u64) -> Result<Region, SimError> {
        let free = self.free_bytes();
        if bytes > free {
            return Err(SimError::OutOfMemory {
                requested: bytes,
                free,
            });
        }
        let base = self.next_address;
        // 256-byte alignment and a gap, as a real allocator leaves.
        self.next_address += bytes.div_ceil(256) * 256 + 256;
        self.allocated += bytes;
        self.memory.insert(
            base,
            Allocation {
                kind,
                data: vec![0; bytes as usize],
            },
        );
        Ok(Region {
            device: self.id,
            base,
            bytes,
            kind,
        })
    }

    pub fn free(&mut self, base: u64) -> Result<(), SimError> {
        let allocation = self
            .memory
            .remove(&base)
            .ok_or(SimError::NotAllocated(base))?;
        self.allocated -= allocation.data.len() as u64;
        Ok(())
    }

    /// Host-to-device copy of little-endian `u32`s.
    pub fn write_u32s(&mut self, address: u64, values: &[u32]) -> Result<(), SimError> {
        let (base, allocation) = self.locate(address, values.len() as u64 * 4)?;
        let offset = (address - base) as usize;
        for (i, v) in values.iter().enumerate() {
            allocation.data[offset + 4 * i..offset + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
        }
        Ok(())
    }

    /// Device-to-host copy of `count` little-endian `u32`s.
    pub fn read_u32s(&mut self, address: u64, count: usize) -> Result<Vec<u32>, SimError> {
        let (base, allocation) = self.locate(address, count as u64 * 4)?;
        let offset = (address - base) as usize;
        Ok(allocation.data[offset..offset + 4 * count]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// Device-to-device copy of `bytes`.
    pub fn copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<(), SimError> {
        let data = {
            let (base, allocation) = self.locate(src, bytes)?;
            let offset = (src - base) as usize;
            allocation.data[offset..offset + bytes as usize].to_vec()
        };
        let (base, allocation) = self.locate(dst, bytes)?;
        let offset = (dst - base) as usize;
        allocation.data[offset..offset + bytes as usize].copy_from_slice(&data);
        Ok(())
    }

    /// A memset of `count` little-endian `u32`s.
    pub fn fill_u32s(&mut self, dst: u64, value: u32, count: usize) -> Result<(), SimError> {
        self.write_u32s(dst, &vec![value; count])
    }

    /// The bytes of the allocation at `base`.
    pub fn bytes(&self, base: u64) -> Option<&[u8]> {
        self.memory.get(&base).map(|a| a.data.as_slice())
    }

    /// The kind of the allocation at `base`.
    pub fn kind(&self, base: u64) -> Option<AllocKind> {
        self.memory.get(&base).map(|a| a.kind)
    }

    pub(super) fn locate(
        &mut self,
        address: u64,
        bytes: u64,
    ) -> Result<(u64, &mut Allocation), SimError> {
        self.memory
            .range_mut(..=address)
            .next_back()
            .filter(|(base, a)| address + bytes <= **base + a.data.len() as u64)
            .map(|(base, a)| (*base, a))
            .ok_or(SimError::Fault {
                kernel: "memcpy".to_string(),
                address,
                bytes,
            })
    }

    pub(super) fn free_bytes(&self) -> u64 {
        self.capacity
            .saturating_sub(self.allocated)
            .saturating_sub(self.device_staging_in_use)
    }
}
