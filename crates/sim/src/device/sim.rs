//! The software device's state and settings: its memory map, counter groups, units per
//! thread, clock and the knobs tests turn.

use crate::device::state::{Allocation, DeviceActivity, SimUnit};
use crate::device::traced::Traced;
use kreplay_core::backend::DeviceId;
use kreplay_core::config::CounterGroup;
use kreplay_core::reference_chip::{SimMetric, COUNTERS_PER_PASS};
use kreplay_format::CounterName;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::thread::ThreadId;
use std::time::{SystemTime, UNIX_EPOCH};

/// Device memory of a fresh device, bytes.
pub const DEFAULT_CAPACITY_BYTES: u64 = 1 << 30;
/// Device 0's first address (not 0, so that a null address is never valid); device `n`'s is
/// `n << 40` above it.
pub(super) const FIRST_ADDRESS: u64 = 0x7f00_0000_0000;
/// Host staging the device's snapshots may use, bytes.
pub const DEFAULT_HOST_STAGING_BYTES: u64 = 4 << 30;
/// Launches one execution can measure separately (as CUPTI's range profiler has a maximum
/// number of ranges per pass).
pub const DEFAULT_MAX_WINDOW: usize = 256;

/// The software device.
pub struct SimDevice {
    pub(super) id: DeviceId,
    pub(super) memory: BTreeMap<u64, Allocation>,
    pub(super) next_address: u64,
    pub(super) capacity: u64,
    pub(super) allocated: u64,
    pub(super) device_staging_in_use: u64,
    pub(super) host_staging_limit: u64,
    /// Counter groups of the configuration, resolved to device metrics (with requested names).
    pub(super) groups: Vec<Vec<(CounterName, Option<SimMetric>)>>,
    /// The unit each thread measures: launches count into their own thread's unit, as
    /// counters of a GPU context belong to the launches made in it.
    pub(super) units: HashMap<ThreadId, SimUnit>,
    pub(super) max_window: usize,
    pub(super) clock_ns: u64,
    pub(super) jitter_state: u64,
    /// Drains time out once this many have succeeded (`None`: never).
    pub(super) drains_before_stall: Option<u64>,
    pub(super) activity: DeviceActivity,
    /// The hardware pass that collects each group (each its own unless packed).
    pub(super) pass_of: Vec<usize>,
    /// `--cache-control all`: every measured launch is preceded by a flush.
    pub(super) flush_before_launches: bool,
    /// Threads whose unit flushed since its conditions were last taken.
    pub(super) flushed: HashSet<ThreadId>,
    /// Launches timed without waiting (see `traced`).
    pub(super) traced: Traced,
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
                        .map(|c| {
                            let name = CounterName::from(c.requested.as_str());
                            (name, SimMetric::from_name(&c.metric))
                        })
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
            traced: Traced::default(),
        }
    }

    /// The device clock's time for a marker call (the clock of the dispatches' timestamps),
    /// advanced by a nanosecond so that every call has a time of its own.
    pub fn marker_time_ns(&mut self) -> u64 {
        self.clock_ns += 1;
        self.clock_ns
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
}
