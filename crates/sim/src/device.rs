//! The software device: allocations are byte buffers, kernels are Rust closures over them, and
//! counters are computed from what a kernel does. It implements the engine's
//! job traits ([`kreplay_core::backend::ReplayBackend`]), so the whole replay contract runs in
//! CI without a GPU.

use crate::{SimMetric, COUNTERS_PER_PASS};
use kreplay_core::backend::{
    AllocKind, Backend, BackendError, DeviceId, Measurement, Memory, PassCounters, Region,
    Relaunch, SharedDevice, Timing, UnitConditions, UnitPlan,
};
use kreplay_core::config::CounterGroup;
use kreplay_format::{CacheState, CounterSample, Staging};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, ThreadId};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod backend;
mod shared;

pub use shared::SharedSimDevice;

/// Device memory of a fresh device, bytes.
pub const DEFAULT_CAPACITY_BYTES: u64 = 1 << 30;
/// Device 0's first address (not 0, so that a null address is never valid); device `n`'s is
/// `n << 40` above it.
const FIRST_ADDRESS: u64 = 0x7f00_0000_0000;
/// Host staging the device's snapshots may use, bytes.
pub const DEFAULT_HOST_STAGING_BYTES: u64 = 4 << 30;
/// Threads per warp, for `sim__warps_launched.sum`.
pub const WARP_SIZE: u64 = 32;
/// Launches one execution can measure separately (as CUPTI's range profiler has a maximum
/// number of ranges per pass).
pub const DEFAULT_MAX_WINDOW: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("kernel {kernel} accessed {bytes} bytes at {address:#x}, outside every allocation")]
    Fault {
        kernel: String,
        address: u64,
        bytes: u64,
    },
    #[error("{0:#x} is not the start of an allocation")]
    NotAllocated(u64),
    #[error("out of device memory: {requested} bytes requested, {free} free")]
    OutOfMemory { requested: u64, free: u64 },
}

/// What one kernel execution did, the source of every counter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecStats {
    pub warps: u64,
    pub instructions: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub cycles: u64,
}

impl ExecStats {
    fn add(&mut self, other: &ExecStats) {
        self.warps += other.warps;
        self.instructions += other.instructions;
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.cycles = self.cycles.max(other.cycles);
    }

    fn value(&self, metric: SimMetric) -> f64 {
        (match metric {
            SimMetric::WarpsLaunched => self.warps,
            SimMetric::InstExecuted => self.instructions,
            SimMetric::CyclesElapsed => self.cycles,
            SimMetric::BytesWritten => self.bytes_written,
            SimMetric::BytesRead => self.bytes_read,
        }) as f64
    }
}

/// The body of a kernel: runs once per launch over the whole grid (the closure loops over the
/// threads it needs; [`KernelContext::threads`] says how many there are).
pub type KernelBody = dyn Fn(&mut KernelContext<'_>) + Send + Sync;

struct KernelDef {
    id: u64,
    mangled: String,
    demangled: String,
    body: Box<KernelBody>,
}

/// A kernel function of the software device. Cheap to clone.
#[derive(Clone)]
pub struct SimKernel {
    def: Arc<KernelDef>,
}

impl fmt::Debug for SimKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimKernel")
            .field("id", &self.def.id)
            .field("name", &self.def.demangled)
            .finish()
    }
}

impl SimKernel {
    /// `mangled` is what a module would call the symbol, `demangled` what the filters match.
    pub fn new(
        id: u64,
        mangled: impl Into<String>,
        demangled: impl Into<String>,
        body: impl Fn(&mut KernelContext<'_>) + Send + Sync + 'static,
    ) -> SimKernel {
        SimKernel {
            def: Arc::new(KernelDef {
                id,
                mangled: mangled.into(),
                demangled: demangled.into(),
                body: Box::new(body),
            }),
        }
    }

    pub fn id(&self) -> u64 {
        self.def.id
    }
    pub fn mangled_name(&self) -> &str {
        &self.def.mangled
    }
    pub fn demangled_name(&self) -> &str {
        &self.def.demangled
    }
}

/// One launch: kernel, geometry and arguments (addresses and scalars), kept for re-execution;
/// `device` is the device it runs on (the runtime sets it at the launch).
#[derive(Debug, Clone)]
pub struct SimLaunch {
    pub kernel: SimKernel,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub args: Vec<u64>,
    pub device: DeviceId,
}

impl SimLaunch {
    pub fn threads(&self) -> u64 {
        let blocks: u64 = self.grid.iter().map(|&g| u64::from(g)).product();
        let per_block: u64 = self.block.iter().map(|&b| u64::from(b)).product();
        blocks * per_block
    }

    pub fn warps(&self) -> u64 {
        let blocks: u64 = self.grid.iter().map(|&g| u64::from(g)).product();
        let per_block: u64 = self.block.iter().map(|&b| u64::from(b)).product();
        blocks * per_block.div_ceil(WARP_SIZE)
    }
}

#[derive(Debug, Clone)]
struct Allocation {
    kind: AllocKind,
    data: Vec<u8>,
}

/// What a kernel body sees: its arguments and the device's memory, with every access counted.
pub struct KernelContext<'a> {
    memory: &'a mut BTreeMap<u64, Allocation>,
    launch: &'a SimLaunch,
    stats: ExecStats,
    fault: Option<(u64, u64)>,
}

impl KernelContext<'_> {
    /// Argument `index` (0 if absent).
    pub fn arg(&self, index: usize) -> u64 {
        self.launch.args.get(index).copied().unwrap_or(0)
    }

    /// Threads in the grid.
    pub fn threads(&self) -> u64 {
        self.launch.threads()
    }

    /// Counts `n` warp instructions (deterministic work the kernel reports).
    pub fn count_instructions(&mut self, n: u64) {
        self.stats.instructions += n;
    }

    fn span(&mut self, address: u64, bytes: u64) -> Option<(&mut Allocation, usize)> {
        let found = self
            .memory
            .range_mut(..=address)
            .next_back()
            .filter(|(base, a)| address + bytes <= **base + a.data.len() as u64)
            .map(|(base, a)| {
                let offset = (address - *base) as usize;
                (a, offset)
            });
        if found.is_none() && self.fault.is_none() {
            self.fault = Some((address, bytes));
        }
        found
    }

    pub fn read_u32(&mut self, address: u64) -> u32 {
        self.stats.bytes_read += 4;
        match self.span(address, 4) {
            Some((a, o)) => u32::from_le_bytes(a.data[o..o + 4].try_into().unwrap_or([0; 4])),
            None => 0,
        }
    }

    pub fn write_u32(&mut self, address: u64, value: u32) {
        self.stats.bytes_written += 4;
        if let Some((a, o)) = self.span(address, 4) {
            a.data[o..o + 4].copy_from_slice(&value.to_le_bytes());
        }
    }
}

/// Where a snapshot's copy lives.
#[derive(Debug)]
pub struct SimSnapshot {
    device: DeviceId,
    place: Staging,
    bytes: u64,
    regions: Vec<(u64, Vec<u8>)>,
}

impl SimSnapshot {
    pub fn place(&self) -> Staging {
        self.place
    }
    pub fn device(&self) -> DeviceId {
        self.device
    }
}

/// Counts of what the device did, for tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceActivity {
    pub executions: u64,
    pub relaunches: u64,
    pub snapshots: u64,
    pub restores: u64,
    pub drains: u64,
    /// Writes captured for later executions.
    pub captures: u64,
    /// Cache flushes before measured launches (`--cache-control all`; the device has no
    /// cache, so a flush only counts).
    pub flushes: u64,
}

/// One measured launch of an execution: a range of its own.
#[derive(Debug, Clone, Copy)]
struct Range {
    stats: ExecStats,
    start_ns: u64,
    end_ns: u64,
}

/// A replay unit being measured (see [`Measurement::plan_unit`]).
#[derive(Debug)]
struct SimUnit {
    /// The group of each pass and the execution that measures it.
    groups: Vec<Option<usize>>,
    plan: UnitPlan,
    /// The running execution and its ranges so far.
    running: Option<usize>,
    ranges: Vec<Range>,
    /// The launch between `launch_starts` and `launch_ends`: what it executed so far.
    pending: Option<Range>,
    /// Started for several launches: another thread may stop it (the one closing the window)
    /// and then runs its later executions.
    shareable: bool,
    /// Each execution's ranges, once stopped.
    measured: Vec<Option<Vec<Range>>>,
}

/// Where (device, address) a captured write came from, and its bytes.
#[derive(Debug, Clone)]
pub struct SimCapture {
    device: DeviceId,
    base: u64,
    bytes: Vec<u8>,
}

/// The software device.
pub struct SimDevice {
    id: DeviceId,
    memory: BTreeMap<u64, Allocation>,
    next_address: u64,
    capacity: u64,
    allocated: u64,
    device_staging_in_use: u64,
    host_staging_limit: u64,
    /// Counter groups of the configuration, resolved to device metrics (with requested names).
    groups: Vec<Vec<(String, Option<SimMetric>)>>,
    /// The unit each thread measures: launches count into their own thread's unit, as
    /// counters of a GPU context belong to the launches made in it.
    units: HashMap<ThreadId, SimUnit>,
    max_window: usize,
    clock_ns: u64,
    jitter_state: u64,
    /// Drains time out once this many have succeeded (`None`: never).
    drains_before_stall: Option<u64>,
    activity: DeviceActivity,
    /// The hardware pass that collects each group (each its own unless packed).
    pass_of: Vec<usize>,
    /// `--cache-control all`: every measured launch is preceded by a flush.
    flush_before_launches: bool,
    /// Threads whose unit flushed since its conditions were last taken.
    flushed: HashSet<ThreadId>,
}

impl SimDevice {
    /// A device collecting `groups` (the configuration's counter groups; empty for none).
    pub fn new(groups: &[CounterGroup]) -> SimDevice {
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9e37_79b9_7f4a_7c15);
        SimDevice {
            id: 0,
            memory: BTreeMap::new(),
            next_address: FIRST_ADDRESS,
            capacity: DEFAULT_CAPACITY_BYTES,
            allocated: 0,
            device_staging_in_use: 0,
            host_staging_limit: DEFAULT_HOST_STAGING_BYTES,
            groups: groups
                .iter()
                .map(|g| {
                    g.counters
                        .iter()
                        .map(|c| (c.requested.clone(), SimMetric::from_name(&c.metric)))
                        .collect()
                })
                .collect(),
            units: HashMap::new(),
            max_window: DEFAULT_MAX_WINDOW,
            clock_ns: 1_000_000,
            jitter_state: seed | 1,
            drains_before_stall: None,
            activity: DeviceActivity::default(),
            pass_of: (0..groups.len()).collect(),
            flush_before_launches: false,
            flushed: HashSet::new(),
        }
    }

    /// Flushes the (absent) caches before every measured launch, as `--cache-control all`.
    pub fn flush_before_launches(&mut self) {
        self.flush_before_launches = true;
    }

    /// Packs the groups into shared hardware passes, as the CUDA backend does: whole groups
    /// whose distinct counters fit one pass are measured by one execution, first fit in group
    /// order. A new device does not pack (a test chooses); `kreplay-sim-app` packs unless
    /// `KREPLAY_PACK_GROUPS=0`, as the CUDA backend does.
    pub fn pack_groups(&mut self) {
        let groups = &self.groups;
        let fits = |members: &[usize]| {
            let mut names: Vec<&str> = Vec::new();
            for &g in members {
                for (name, metric) in &groups[g] {
                    if metric.is_none() {
                        return Ok::<bool, std::convert::Infallible>(false);
                    }
                    if !names.contains(&name.as_str()) {
                        names.push(name);
                    }
                }
            }
            Ok(names.len() <= COUNTERS_PER_PASS)
        };
        let passes = match kreplay_core::catalog::pack_groups(groups.len(), fits) {
            Ok(passes) => passes,
            Err(never) => match never {},
        };
        for (pass, members) in passes.iter().enumerate() {
            for &g in members {
                self.pass_of[g] = pass;
            }
        }
    }

    /// Hardware passes after packing.
    pub fn hardware_passes(&self) -> usize {
        self.pass_of.iter().max().map_or(0, |last| last + 1)
    }

    pub fn id(&self) -> DeviceId {
        self.id
    }

    /// The same device numbered `id` (a process's second GPU and so on), its addresses apart
    /// from every other device's; before its first allocation.
    pub fn with_id(mut self, id: DeviceId) -> SimDevice {
        debug_assert!(
            self.memory.is_empty(),
            "numbered before its first allocation"
        );
        self.id = id;
        self.next_address = FIRST_ADDRESS + (u64::from(id) << 40);
        self
    }

    /// Device memory size (for tests of staging fallbacks).
    pub fn set_capacity(&mut self, bytes: u64) {
        self.capacity = bytes;
    }

    /// Host staging limit (for tests of the too-large decline).
    pub fn set_host_staging_limit(&mut self, bytes: u64) {
        self.host_staging_limit = bytes;
    }

    /// The most executions a window pass measures (for tests of the window cap).
    pub fn set_max_window(&mut self, executions: usize) {
        self.max_window = executions;
    }

    /// Makes every drain time out (for tests of the drain deadline).
    pub fn set_drain_stalled(&mut self, stalled: bool) {
        self.drains_before_stall = stalled.then_some(self.activity.drains);
    }

    /// Makes drains time out after `successful` more have succeeded (for end-to-end tests of
    /// the drain deadline: `kreplay-sim-app --stall-drain-after N`).
    pub fn stall_drains_after(&mut self, successful: u64) {
        self.drains_before_stall = Some(self.activity.drains + successful);
    }

    pub fn activity(&self) -> DeviceActivity {
        self.activity
    }

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

    fn locate(&mut self, address: u64, bytes: u64) -> Result<(u64, &mut Allocation), SimError> {
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

    fn free_bytes(&self) -> u64 {
        self.capacity
            .saturating_sub(self.allocated)
            .saturating_sub(self.device_staging_in_use)
    }

    /// Executes `launch` now (the device is synchronous). Counts into the active pass, if any.
    pub fn execute(&mut self, launch: &SimLaunch) -> Result<(), SimError> {
        let mut context = KernelContext {
            memory: &mut self.memory,
            launch,
            stats: ExecStats {
                warps: launch.warps(),
                ..ExecStats::default()
            },
            fault: None,
        };
        (launch.kernel.def.body)(&mut context);
        let mut stats = context.stats;
        let fault = context.fault;
        stats.cycles = self.cycles_for(&stats);
        let start_ns = self.clock_ns;
        self.clock_ns += stats.cycles.max(1);
        self.activity.executions += 1;
        let end_ns = self.clock_ns;
        if let Some(pending) = self
            .units
            .get_mut(&thread::current().id())
            .and_then(|u| u.pending.as_mut())
        {
            if pending.stats == ExecStats::default() {
                pending.start_ns = start_ns;
            }
            pending.end_ns = end_ns;
            pending.stats.add(&stats);
        }
        match fault {
            Some((address, bytes)) => Err(SimError::Fault {
                kernel: launch.kernel.demangled_name().to_string(),
                address,
                bytes,
            }),
            None => Ok(()),
        }
    }

    /// A clock counter: a deterministic base plus up to 5 % jitter, as real runs vary.
    fn cycles_for(&mut self, stats: &ExecStats) -> u64 {
        let base = 100 + stats.instructions * 4 + (stats.bytes_read + stats.bytes_written) / 8;
        // xorshift64
        let mut x = self.jitter_state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.jitter_state = x;
        base + x % (base / 20 + 1)
    }

    /// The counters of `group` over `stats`.
    fn counters_for(&self, group: Option<usize>, stats: &ExecStats) -> Vec<CounterSample> {
        match group.and_then(|g| self.groups.get(g)) {
            Some(counters) => counters
                .iter()
                .filter_map(|(name, metric)| {
                    metric.map(|m| CounterSample {
                        name: name.clone(),
                        value: stats.value(m),
                    })
                })
                .collect(),
            None => Vec::new(),
        }
    }

    /// The calling thread's unit, or the shareable unit another thread started (a window
    /// closed by this thread), which this thread then takes over.
    fn unit_here(&mut self) -> Result<&mut SimUnit, BackendError> {
        let me = thread::current().id();
        if !self.units.contains_key(&me) {
            let other = self
                .units
                .iter()
                .find(|(_, u)| u.shareable)
                .map(|(thread, _)| *thread);
            if let Some(unit) = other.and_then(|thread| self.units.remove(&thread)) {
                self.units.insert(me, unit);
            }
        }
        self.units
            .get_mut(&me)
            .ok_or_else(|| BackendError::Failed("no unit planned on this thread".to_string()))
    }

    fn check_group(&self, group: Option<usize>) -> Result<(), BackendError> {
        let Some(index) = group else { return Ok(()) };
        let counters = self.groups.get(index).ok_or_else(|| {
            BackendError::Failed(format!(
                "counter group {index} does not exist ({} configured)",
                self.groups.len()
            ))
        })?;
        if let Some((name, _)) = counters.iter().find(|(_, m)| m.is_none()) {
            return Err(BackendError::Failed(format!(
                "counter {name} is not a SIM metric"
            )));
        }
        if counters.len() > COUNTERS_PER_PASS {
            return Err(BackendError::Failed(format!(
                "counter group {index} has {} counters; the SIM device collects at most {COUNTERS_PER_PASS} per pass",
                counters.len()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
