//! Staging buffers and the copies between tracked memory and a snapshot (one batched
//! `cuMemcpyBatchAsync` per direction, but one call per region while an execution measures:
//! the range profiler counts a batched copy between two kernels as kernels).

use super::*;

impl CudaBackend {
    /// Free memory of the current context's device now, bytes (0 when it cannot be read).
    pub(super) fn memory_free_now(&self) -> u64 {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: writes two sizes for the current context's device.
        match unsafe { drv!(self.driver, cuMemGetInfo_v2(&mut free, &mut total)) } {
            Ok(()) => free as u64,
            Err(_) => 0,
        }
    }

    /// A staging buffer of at least `bytes` at `place`: a spare one, or a new allocation
    /// (2 MiB steps, so that small variations reuse buffers).
    pub(super) fn take_buffer(
        &mut self,
        device: DeviceId,
        place: Staging,
        bytes: u64,
    ) -> Result<Buffer, BackendError> {
        let d = self.driver;
        let state = self.state(device)?;
        let fit = state
            .spare
            .iter()
            .enumerate()
            .filter(|(_, b)| b.place == place && b.bytes >= bytes)
            .min_by_key(|(_, b)| b.bytes)
            .map(|(i, _)| i);
        if let Some(i) = fit {
            return Ok(state.spare.swap_remove(i));
        }
        // A spare of the same place that is too small goes back to the application first.
        let small: Vec<Buffer> = state
            .spare
            .iter()
            .filter(|b| b.place == place)
            .copied()
            .collect();
        state.spare.retain(|b| b.place != place);
        for buffer in small {
            // SAFETY: a tool-owned buffer no snapshot uses.
            unsafe { free_buffer(d, buffer) };
        }
        let want = bytes.div_ceil(2 << 20).max(1) * (2 << 20);
        if place == Staging::Host && want > host_staging_limit() {
            // Pinning most of the host's memory would starve the application (or end it).
            return Err(BackendError::OutOfStagingMemory(place, bytes));
        }
        // SAFETY: writes the new allocation's address.
        let address = unsafe {
            match place {
                Staging::Device => {
                    let mut ptr: CUdeviceptr = 0;
                    drv!(d, cuMemAlloc_v2(&mut ptr, want as usize)).map(|()| ptr)
                }
                Staging::Host => {
                    let mut ptr: *mut std::ffi::c_void = std::ptr::null_mut();
                    drv!(
                        d,
                        cuMemHostAlloc(&mut ptr, want as usize, sys::CU_MEMHOSTALLOC_PORTABLE)
                    )
                    .map(|()| ptr as u64)
                }
                Staging::None => return Err(BackendError::Failed("snapshot to nowhere".into())),
            }
        }
        .map_err(|_| BackendError::OutOfStagingMemory(place, bytes))?;
        Ok(Buffer {
            address,
            bytes: want,
            place,
        })
    }

    /// Copies between tracked memory and a snapshot's buffer on the tool stream, then waits.
    pub(super) fn copy(
        &mut self,
        snapshot: &CudaSnapshot,
        to_staging: bool,
    ) -> Result<(), BackendError> {
        let d = self.driver;
        let state = self.state(snapshot.device)?;
        // A unit may be closed on another thread: its copies run in the device's context.
        let _ctx = ContextGuard::make_current(d, state.ctx).map_err(failed)?;
        let stream = state.tool_stream.raw();
        let base = snapshot.buffer.address;
        // Not while an execution measures (a unit taking in new allocations between members):
        // the range profiler counted each batched copy as a kernel of its own (H200,
        // 2026-12-01: "measured 5 kernel(s) where the unit launched 3"); single copies it does
        // not count.
        let measuring = state
            .unit
            .as_ref()
            .is_some_and(|unit| unit.execution.is_some());
        if snapshot.entries.len() > 1 && !measuring {
            // One call for every region (many small ones cost a call each otherwise); where the
            // driver has no batched copy or refuses it, the copies go one by one (a repeat of
            // a copy already done is harmless).
            let (mut dsts, mut srcs, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
            for (region, offset) in &snapshot.entries {
                let (dst, src) = if to_staging {
                    (base + offset, region.base)
                } else {
                    (region.base, base + offset)
                };
                dsts.push(dst);
                srcs.push(src);
                sizes.push(region.bytes as usize);
            }
            let mut attributes = sys::CUmemcpyAttributes {
                srcAccessOrder: sys::CUmemcpySrcAccessOrder_enum_CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
                ..Default::default()
            };
            let mut attribute_of = [0usize];
            // SAFETY: three arrays of `count` elements and one attribute applying from copy 0;
            // regions are live tracked allocations, staging was sized for them.
            let batched = unsafe {
                drv!(
                    d,
                    cuMemcpyBatchAsync_v2(
                        dsts.as_mut_ptr(),
                        srcs.as_mut_ptr(),
                        sizes.as_mut_ptr(),
                        dsts.len(),
                        &mut attributes,
                        attribute_of.as_mut_ptr(),
                        1,
                        stream
                    )
                )
            };
            if batched.is_ok() {
                // SAFETY: the tool's own stream.
                return unsafe { drv!(d, cuStreamSynchronize(stream)) }.map_err(failed);
            }
        }
        for (region, offset) in &snapshot.entries {
            let staged = base + offset;
            let n = region.bytes as usize;
            // SAFETY: regions are live tracked allocations; staging was sized for them.
            let result = unsafe {
                match (snapshot.buffer.place, to_staging) {
                    (Staging::Device, true) => {
                        drv!(d, cuMemcpyDtoDAsync_v2(staged, region.base, n, stream))
                    }
                    (Staging::Device, false) => {
                        drv!(d, cuMemcpyDtoDAsync_v2(region.base, staged, n, stream))
                    }
                    (_, true) => drv!(
                        d,
                        cuMemcpyDtoHAsync_v2(staged as *mut _, region.base, n, stream)
                    ),
                    (_, false) => drv!(
                        d,
                        cuMemcpyHtoDAsync_v2(region.base, staged as *const _, n, stream)
                    ),
                }
            };
            result.map_err(failed)?;
        }
        // SAFETY: the tool's own stream.
        unsafe { drv!(d, cuStreamSynchronize(stream)) }.map_err(failed)
    }

    /// The regions whose first and last bytes are in live device memory of the current context.
    /// One that is not was freed behind the inventory's back (a diagnostic line says which).
    /// Asked of `cuMemAlloc`'d memory and module variables only, the kinds seen to answer on
    /// the H200: pool, managed and virtual-memory regions are kept unasked (were the query to
    /// fail for live ones, their memory would silently go unrestored), and their lifetimes are
    /// tracked from their own frees and unmaps.
    pub(super) fn allocated(&self, regions: &[Region]) -> Vec<Region> {
        let checked = |kind: AllocKind| {
            matches!(
                kind,
                AllocKind::Device | AllocKind::Pitched | AllocKind::ModuleVariable
            )
        };
        let live = |address: sys::CUdeviceptr| {
            let mut start: sys::CUdeviceptr = 0;
            // SAFETY: the attribute is written to a CUdeviceptr.
            unsafe {
                drv!(
                    self.driver,
                    cuPointerGetAttribute(
                        (&mut start as *mut sys::CUdeviceptr).cast(),
                        sys::CUpointer_attribute_enum_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                        address
                    )
                )
            }
            .is_ok()
                && start != 0
        };
        regions
            .iter()
            .filter(|region| {
                let ok = !checked(region.kind)
                    || (live(region.base) && live(region.base + region.bytes.max(1) - 1));
                if !ok {
                    kreplay_cuda::debug::line(&format!(
                        "tracked memory at {:#x} ({} bytes, {:?}) is no longer allocated: not snapshotted",
                        region.base, region.bytes, region.kind
                    ));
                }
                ok
            })
            .copied()
            .collect()
    }
}

/// Frees a staging buffer.
///
/// # Safety
/// `buffer` was allocated by [`CudaBackend::take_buffer`] and nothing uses it.
pub(super) unsafe fn free_buffer(d: &Driver, buffer: Buffer) {
    match buffer.place {
        Staging::Device => {
            let _ = drv!(d, cuMemFree_v2(buffer.address));
        }
        Staging::Host => {
            let _ = drv!(d, cuMemFreeHost(buffer.address as *mut std::ffi::c_void));
        }
        Staging::None => {}
    }
}
