//! The kernels the application launches and the modules they come from: each module load
//! (recorded as a code object), each kernel's id, name, attributes and module (registered with
//! the engine once), the `__device__` and `__constant__` variables of its module (put into the
//! inventory, so that snapshots cover them), the kernels that must run once (their code prints
//! or uses the device heap), and all of it forgotten when a module is unloaded.

use crate::code_objects::CodeObjects;
use crate::module_symbols::{CubinSymbols, SideEffect};
use crate::CudaEngine;
use kreplay_core::backend::{AllocKind, DeviceId, LaunchKind, Region};
use kreplay_cuda::symbols::{self, code_owner};
use kreplay_cuda::{lock, CUfunction, Driver};
use kreplay_format::KernelSymbol;
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// See [`KernelRegistry::module_contents`].
#[derive(Default)]
struct ModuleContents {
    /// Launched functions (`CUfunction` or `CUkernel` handles).
    pub functions: HashSet<usize>,
    /// Tracked `__device__`/`__constant__` variables: device and address.
    pub variables: Vec<(DeviceId, u64)>,
}

/// A launched kernel as the registry keeps it: what each later launch of it needs, found with
/// one lookup (its launch kind is not worked out from its name again).
#[derive(Debug, Clone)]
struct KernelEntry {
    id: u64,
    mangled: Arc<str>,
    kind: LaunchKind,
    /// The side-effect notes `kind` was worked out from ([`KernelRegistry::effects_noted`]).
    kind_of: u64,
    /// Devices (below 64) its module variables were looked for on.
    resolved_on: u64,
}

/// A launch's kernel: its id, name and launch kind ([`KernelRegistry::launch_kind_of`]).
#[derive(Debug, Clone)]
pub struct LaunchedKernel {
    pub id: u64,
    pub name: Arc<str>,
    pub kind: LaunchKind,
}

/// The bit of `device` in [`KernelEntry::resolved_on`] (none past 63: those look in the set).
fn device_bit(device: DeviceId) -> u64 {
    1u64.checked_shl(device).unwrap_or(0)
}

/// What the registry knows, each part behind its own lock.
pub struct KernelRegistry {
    driver: &'static Driver,
    kernels: Mutex<HashMap<usize, KernelEntry>>,
    next_kernel_id: AtomicU64,
    /// Cubins loaded but not yet matched to a module handle (see `resolve_module_variables`).
    pending_cubins: Mutex<Vec<CubinSymbols>>,
    /// Kernels (mangled names) whose code prints or uses the device heap, from every cubin
    /// loaded so far: they run once ([`KernelRegistry::launch_kind_of`]).
    kernel_effects: Mutex<HashMap<String, LaunchKind>>,
    /// Bumped whenever `kernel_effects` changes: a kernel's cached launch kind is worked out
    /// again when it was worked out before.
    effects_noted: AtomicU64,
    /// Modules (or libraries) whose variables are tracked, per device.
    resolved_modules: Mutex<HashSet<(usize, DeviceId)>>,
    /// Launch handles whose module variables were looked for on a device.
    resolved_launches: Mutex<HashSet<(usize, DeviceId)>>,
    /// What each loaded module or library (by handle) brought: its launched functions and the
    /// variables tracked for it, forgotten when it is unloaded (see
    /// [`KernelRegistry::forget_module`]).
    module_contents: Mutex<HashMap<usize, ModuleContents>>,
    /// Ids given to launches that name no kernel, by the launch API's name
    /// ([`KernelRegistry::launch_api_id`]).
    launch_apis: Mutex<HashMap<&'static str, u64>>,
    /// Every module load, as a code object, and the kernels each defines.
    code_objects: CodeObjects,
}

impl KernelRegistry {
    pub fn new(driver: &'static Driver) -> Self {
        KernelRegistry {
            driver,
            kernels: Mutex::new(HashMap::new()),
            next_kernel_id: AtomicU64::new(1),
            pending_cubins: Mutex::new(Vec::new()),
            kernel_effects: Mutex::new(HashMap::new()),
            effects_noted: AtomicU64::new(0),
            resolved_modules: Mutex::new(HashSet::new()),
            resolved_launches: Mutex::new(HashSet::new()),
            module_contents: Mutex::new(HashMap::new()),
            launch_apis: Mutex::new(HashMap::new()),
            code_objects: CodeObjects::default(),
        }
    }

    /// A module was loaded onto `device` from `image`, defining `kernels` (mangled names, empty
    /// when its symbols could not be read): recorded as the process's next code object, which
    /// those kernels' symbols name when they are registered; the tool's own modules are not.
    pub fn module_loaded(
        &self,
        engine: &CudaEngine,
        device: DeviceId,
        image: &[u8],
        kernels: &[String],
    ) {
        if crate::code_objects::is_tools_own(kernels) {
            return;
        }
        let object = self
            .code_objects
            .loaded(device, std::process::id(), image, kernels);
        engine.register_code_object(object);
    }

    /// The kernel id of a launch that names no kernel (a graph launch run whole, a cooperative
    /// launch on several devices): one per launch API, registered under its name the first time,
    /// so that records and summaries name the call instead of an unknown kernel 0.
    pub fn launch_api_id(&self, engine: &CudaEngine, api: &'static str) -> u64 {
        let mut apis = lock(&self.launch_apis);
        if let Some(id) = apis.get(api) {
            return *id;
        }
        let id = self.next_kernel_id.fetch_add(1, Ordering::Relaxed);
        engine.register_kernel(KernelSymbol {
            kernel_id: id,
            code_object_id: 0,
            mangled_name: api.to_string(),
            demangled_name: api.to_string(),
            registers: 0,
            static_shared_bytes: 0,
            local_bytes: 0,
            param_bytes: 0,
        });
        apis.insert(api, id);
        id
    }

    /// A cubin was loaded: its kernels' side effects are noted, and it waits for the first
    /// launch of one of its kernels to be matched to its module handle.
    pub fn cubin_loaded(&self, symbols: CubinSymbols) {
        self.note_side_effects(&symbols);
        lock(&self.pending_cubins).push(symbols);
    }

    /// Notes the kernels of a loaded cubin that cannot be replayed safely. The device heap
    /// wins over printf (both run once; the heap is the reason that breaks a replay). A kernel
    /// name in several modules takes the strictest of them.
    fn note_side_effects(&self, symbols: &CubinSymbols) {
        let mut effects = lock(&self.kernel_effects);
        for kernel in &symbols.kernels {
            let found = symbols.side_effects_of(kernel);
            let kind = if found.contains(&SideEffect::DeviceHeap) {
                LaunchKind::DeviceHeap
            } else if found.contains(&SideEffect::DevicePrintf) {
                LaunchKind::DevicePrintf
            } else {
                continue;
            };
            let entry = effects.entry(kernel.clone()).or_insert(kind);
            if kind == LaunchKind::DeviceHeap {
                *entry = kind;
            }
            self.effects_noted.fetch_add(1, Ordering::Release);
        }
    }

    /// How an ordinary launch of `kernel` (a mangled name) is handled: once when its code prints
    /// or uses the device heap, else as a kernel. (`assert` is replayed: it prints only when it
    /// fails, and then the launch fails.)
    pub fn launch_kind_of(&self, kernel: &str) -> LaunchKind {
        if is_collective_kernel(kernel) {
            return LaunchKind::Collective;
        }
        lock(&self.kernel_effects)
            .get(kernel)
            .copied()
            .unwrap_or(LaunchKind::Kernel)
    }

    /// The kernel id and name of `f` if it was registered already.
    pub fn known_kernel(&self, f: CUfunction) -> Option<(u64, Arc<str>)> {
        lock(&self.kernels)
            .get(&(f as usize))
            .map(|e| (e.id, Arc::clone(&e.mangled)))
    }

    /// The kernel of a launch of `f` on `device`, registering the kernel (and its module's
    /// variables) the first time. A later launch on a device seen before is one lookup.
    pub fn kernel_id(
        &self,
        engine: &CudaEngine,
        f: CUfunction,
        symbol_name: impl FnOnce() -> Option<String>,
        device: DeviceId,
    ) -> LaunchedKernel {
        let known = lock(&self.kernels).get(&(f as usize)).cloned();
        if let Some(mut entry) = known {
            let noted = self.effects_noted.load(Ordering::Acquire);
            let bit = device_bit(device);
            if entry.resolved_on & bit != 0 && entry.kind_of == noted {
                return entry.launched();
            }
            // A `CUkernel` launched on another device for the first time: its module is loaded
            // there separately, with variables of its own.
            if lock(&self.resolved_launches).insert((f as usize, device)) {
                self.resolve_module_variables(engine, f, &entry.mangled, device);
            }
            entry.resolved_on |= bit;
            entry.kind_of = self.effects_noted.load(Ordering::Acquire);
            entry.kind = self.launch_kind_of(&entry.mangled);
            if let Some(kept) = lock(&self.kernels).get_mut(&(f as usize)) {
                *kept = entry.clone();
            }
            return entry.launched();
        }
        lock(&self.resolved_launches).insert((f as usize, device));
        let function = self.context_function(f);
        let mangled = symbol_name().unwrap_or_else(|| function_name(self.driver, function));
        let id = self.next_kernel_id.fetch_add(1, Ordering::Relaxed);
        self.resolve_module_variables(engine, f, &mangled, device);
        let attributes = kreplay_cuda::kernel::function_attributes(self.driver, function);
        engine.register_kernel(KernelSymbol {
            kernel_id: id,
            code_object_id: self.code_objects.of_kernel(device, &mangled),
            mangled_name: mangled.clone(),
            demangled_name: kreplay_cuda::kernel::demangle(&mangled),
            registers: attributes.registers,
            static_shared_bytes: attributes.static_shared_bytes,
            local_bytes: attributes.local_bytes,
            param_bytes: attributes.param_bytes,
        });
        let entry = KernelEntry {
            id,
            kind_of: self.effects_noted.load(Ordering::Acquire),
            kind: self.launch_kind_of(&mangled),
            mangled: mangled.into(),
            resolved_on: device_bit(device),
        };
        lock(&self.kernels).insert(f as usize, entry.clone());
        entry.launched()
    }

    /// The current context's `CUfunction` for a launch handle that may be a `CUkernel`.
    fn context_function(&self, f: CUfunction) -> CUfunction {
        match symbols::kernel_function(self.driver, f) {
            Ok(function) if !function.is_null() => function,
            _ => f,
        }
    }

    /// Puts the `__device__` and `__constant__` variables of `f`'s module into the inventory.
    /// CUPTI's MODULE_LOADED names a cubin but not its module handle, so the cubin that defines
    /// the kernel `name` is matched to the handle of `f`'s module. The runtime launches with
    /// context-independent `CUkernel` handles (library loading): for those the library's
    /// `cuLibraryGetGlobal` gives the addresses in the current context, and `cuKernelGetFunction`
    /// first makes sure the module is loaded there (lazy loading). For a `CUfunction`,
    /// `cuFuncLoad` does that and `cuModuleGetGlobal` looks the names up. Either load fires its
    /// MODULE_LOADED callback on this thread before the call returns.
    fn resolve_module_variables(
        &self,
        engine: &CudaEngine,
        f: CUfunction,
        name: &str,
        device: DeviceId,
    ) {
        let d = self.driver;
        let Some(code) = code_owner(d, f) else {
            kreplay_cuda::debug::line(&format!(
                "{name}: neither a library kernel nor a module function"
            ));
            return;
        };
        let owner = code.handle();
        lock(&self.module_contents)
            .entry(owner)
            .or_default()
            .functions
            .insert(f as usize);
        if lock(&self.resolved_modules).contains(&(owner, device)) {
            return;
        }
        let cubin = {
            let mut pending = lock(&self.pending_cubins);
            let index = pending
                .iter()
                .rposition(|c| c.kernels.iter().any(|k| k == name));
            index.map(|i| pending.remove(i))
        };
        let Some(cubin) = cubin else {
            kreplay_cuda::debug::line(&format!("{name}: no loaded cubin defines it"));
            return;
        };
        lock(&self.resolved_modules).insert((owner, device));
        for variable in cubin.variables {
            let Ok(c_name) = CString::new(variable.name.as_str()) else {
                continue;
            };
            match code.global(d, &c_name) {
                Ok((address, bytes)) => {
                    kreplay_cuda::debug::line(&format!(
                        "tracking {} {} ({bytes} bytes at {address:#x}) of {name}'s module",
                        if variable.constant {
                            "__constant__"
                        } else {
                            "__device__"
                        },
                        variable.name
                    ));
                    engine.inventory().insert(Region {
                        device,
                        base: address,
                        bytes: bytes as u64,
                        kind: AllocKind::ModuleVariable,
                    });
                    lock(&self.module_contents)
                        .entry(owner)
                        .or_default()
                        .variables
                        .push((device, address));
                }
                Err(e) => kreplay_cuda::debug::line(&format!("{}: {e}", variable.name)),
            }
        }
    }

    /// A module or library (`owner`, its handle) is being unloaded: its variables leave the
    /// inventory (a snapshot would copy memory that no longer exists: the driver faults inside
    /// `cuMemcpyBatchAsync` on it) and its functions are forgotten, so that a function or module
    /// loaded later at the same handle is looked up afresh (its name, its own variables).
    pub fn forget_module(&self, engine: &CudaEngine, owner: usize) {
        let Some(contents) = lock(&self.module_contents).remove(&owner) else {
            return;
        };
        for (device, base) in &contents.variables {
            engine
                .inventory()
                .remove_of_kind(*device, *base, AllocKind::ModuleVariable);
        }
        let mut kernels = lock(&self.kernels);
        for f in &contents.functions {
            kernels.remove(f);
        }
        drop(kernels);
        lock(&self.resolved_launches).retain(|(f, _)| !contents.functions.contains(f));
        lock(&self.resolved_modules).retain(|(o, _)| *o != owner);
        kreplay_cuda::debug::line(&format!(
            "module {owner:#x} unloaded: {} variable(s) and {} function(s) forgotten",
            contents.variables.len(),
            contents.functions.len()
        ));
    }
}

impl KernelEntry {
    fn launched(self) -> LaunchedKernel {
        LaunchedKernel {
            id: self.id,
            name: self.mangled,
            kind: self.kind,
        }
    }
}

/// `f`'s name, or its handle when the driver cannot say.
fn function_name(driver: &Driver, f: CUfunction) -> String {
    symbols::function_name(driver, f).unwrap_or_else(|_| format!("function@{:#x}", f as usize))
}

/// Whether `kernel` (mangled or not) is a kernel of NCCL (an identifier `nccl…Kernel…`:
/// `ncclKernel_*`, `ncclDevKernel_*`, and the symmetric-memory `ncclSymDevKernel_*`,
/// `ncclSymkDevKernel_*`) or NVSHMEM (`nvshmemi_*`, `nvshmemx_*`): kernels that exchange data with
/// other GPUs or processes, which a replay would leave waiting for peers.
pub fn is_collective_kernel(kernel: &str) -> bool {
    let nccl = kernel.match_indices("nccl").any(|(at, _)| {
        let rest = &kernel[at + "nccl".len()..];
        let word = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(rest, |end| &rest[..end]);
        word.contains("Kernel")
    });
    nccl || ["nvshmemi_", "nvshmemx_"]
        .iter()
        .any(|m| kernel.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collective_kernels_are_known_by_name() {
        for name in [
            "ncclKernel_AllReduce_RING_LL_Sum_float",
            "_Z29ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
            "ncclDevKernel_Generic",
            "ncclSymDevKernel_AllReduce_AGxLL_R_sum_f32",
            "_Z34ncclSymkDevKernel_AllGather_LL_v12ncclSymkDevWorkArgs",
            "_Z21nvshmemi_barrier_alliii",
        ] {
            assert!(is_collective_kernel(name), "{name}");
        }
        for name in [
            "_Z7add_onePfi",
            "ampere_sgemm_128x64_nn",
            "ncclish_user_kernel",
        ] {
            assert!(!is_collective_kernel(name), "{name}");
        }
    }
}
