//! What the engine is told of a launch or an API call: its kind, the devices it may touch,
//! and what a call does to device memory.

use crate::backend::memory::DeviceId;

/// Why a launch cannot be replayed, as the backend sees it at launch time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LaunchKind {
    /// An ordinary single-device kernel launch: replayable.
    Kernel,
    /// A graph launch run whole (backends run graphs node by node where they can): runs once, with
    /// timestamps only when it would be measured.
    Graph,
    /// Recorded into a stream capture: does not execute, never profiled.
    StreamCapture,
    /// A multi-device cooperative launch: runs once.
    MultiDevice,
    /// A kernel whose code calls `printf`: runs once (each execution prints).
    DevicePrintf,
    /// A kernel whose code calls the device heap (`malloc`, `free`, device `new`/`delete`):
    /// runs once (the heap's state is not restored between executions).
    DeviceHeap,
    /// A kernel of a collective-communication library (NCCL, NVSHMEM): it waits for peers that
    /// would not run it again, so it runs once (the CUDA backend knows them by name).
    Collective,
    /// A kernel whose parameters hold an address of ordinary (pageable) host memory, which the
    /// device reaches through pageable memory access (HMM, ATS): no snapshot covers that
    /// memory, so it runs once.
    PageableHost,
    /// A kernel whose parameters hold an address of another device's tracked memory (peer
    /// access): a unit's snapshot covers its own device only, so it runs once, with every
    /// device's replays held off while it is launched.
    PeerMemory,
}

/// The devices an application call or launch may touch: it holds off replays on them (their
/// replay gates' fences) while it runs, and replay units on other devices stay open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceScope {
    /// Only this device's memory and work (the calling context's device, every address the
    /// call names on it or in host memory).
    One(DeviceId),
    /// Any device: a call the backend cannot pin to one (a peer copy, a context switch, an
    /// unknown call, an address on another device).
    All,
}

/// What the engine (and a replay policy, through the SDK) knows of a dispatch before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchInfo {
    pub device: DeviceId,
    pub kind: LaunchKind,
    /// The kernel's name as the module spells it (mangled for C++), shared: a launch's info is
    /// copied into its records without copying the name.
    pub kernel_name: std::sync::Arc<str>,
    pub kernel_id: u64,
    pub stream_id: u64,
    pub correlation_id: u64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared_bytes: u32,
}

/// What a call other than a launch does, as far as a replay unit is concerned (the backend
/// classifies its API calls; see [`crate::Engine::enter_call`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallEffect {
    /// Not known to be harmless: an open unit closes (its passes run) before the call.
    Unknown,
    /// Releases memory (a free, an unmap): a unit that restores memory closes first, since its
    /// snapshot or its later executions may touch what goes away.
    Frees,
    /// Writes no device memory: a synchronisation, an event or stream call, a copy to the host,
    /// a module load, an allocation, a query. The application may look at results, so a unit
    /// that stays open across it puts the application's view back after its later executions.
    NoDeviceWrite,
    /// Writes `bytes` at `base` of the calling context's device (a copy to the device, a
    /// memset). A unit that restores memory stays open only when the bytes lie in tracked
    /// memory: they are captured after the call and written again at that point of every later
    /// execution.
    DeviceWrite {
        device: DeviceId,
        base: u64,
        bytes: u64,
    },
}
