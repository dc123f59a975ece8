//! The modules the application loads, as rocprofv3's code objects: each load CUPTI reports
//! (`MODULE_LOADED`, with the image the driver was handed) gets the next id of the process, and
//! the kernels its symbol table names remember it, so that a kernel registered at its first
//! launch says which module it comes from.
//!
//! A module is loaded once per context (device) it is used on, and each load is a code object
//! of its own, as a code object is per agent in rocprofv3. A kernel is looked up by its device
//! and mangled name (the latest load defining it wins), then by name alone; 0 when no loaded
//! image names it (a PTX or fat-binary image whose symbols could not be read).
//!
//! The tool's own modules (the L2 flush's kernels, `crate::flush`) are loaded in the process
//! too; they are not the application's and are not recorded ([`is_tools_own`]).

use kreplay_core::backend::DeviceId;
use kreplay_cuda::lock;
use kreplay_format::CodeObject;
use std::collections::HashMap;
use std::sync::Mutex;

/// The prefix of every kernel of the tool's own modules.
const TOOL_KERNEL_PREFIX: &str = "kreplay_";

/// Whether a loaded image defining `kernels` is one of the tool's own modules: it defines
/// kernels, all of them the tool's.
pub fn is_tools_own(kernels: &[String]) -> bool {
    !kernels.is_empty() && kernels.iter().all(|k| k.starts_with(TOOL_KERNEL_PREFIX))
}

#[derive(Default)]
struct Known {
    last_id: u64,
    /// (device, mangled kernel name) → code object id.
    by_device: HashMap<(DeviceId, String), u64>,
    /// Mangled kernel name → code object id, any device.
    by_name: HashMap<String, u64>,
}

/// The code objects of the process and the kernels each defines.
#[derive(Default)]
pub struct CodeObjects {
    known: Mutex<Known>,
}

impl CodeObjects {
    /// A module was loaded onto `device` from `image` (at its host address) in process `pid`;
    /// `kernels` are the mangled names its symbol table defines. Returns its code object.
    pub fn loaded(
        &self,
        device: DeviceId,
        pid: u32,
        image: &[u8],
        kernels: &[String],
    ) -> CodeObject {
        let mut known = lock(&self.known);
        known.last_id += 1;
        let id = known.last_id;
        for kernel in kernels {
            known.by_device.insert((device, kernel.clone()), id);
            known.by_name.insert(kernel.clone(), id);
        }
        CodeObject::from_memory(
            id,
            u64::from(device),
            pid,
            image.as_ptr() as u64,
            image.len() as u64,
        )
    }

    /// The code object the kernel `mangled` launched on `device` comes from; 0 when unknown.
    pub fn of_kernel(&self, device: DeviceId, mangled: &str) -> u64 {
        let known = lock(&self.known);
        known
            .by_device
            .get(&(device, mangled.to_string()))
            .or_else(|| known.by_name.get(mangled))
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_are_numbered_and_kernels_find_their_module() {
        let objects = CodeObjects::default();
        let image = vec![0x7fu8, b'E', b'L', b'F', 0, 0, 0, 0];
        let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let first = objects.loaded(0, 321, &image, &names(&["_Z1av", "_Z1bv"]));
        let second = objects.loaded(0, 321, &image[..4], &names(&["_Z1cv"]));
        let on_device_1 = objects.loaded(1, 321, &image, &names(&["_Z1av"]));
        assert_eq!(
            (
                first.code_object_id,
                second.code_object_id,
                on_device_1.code_object_id
            ),
            (1, 2, 3)
        );
        assert_eq!(on_device_1.agent_id, 1);
        assert_eq!(
            first.uri,
            format!("memory://321#offset={:#x}&size=8", image.as_ptr() as u64)
        );
        assert_eq!(second.memory_size, 4);
        assert_eq!(objects.of_kernel(0, "_Z1av"), 1);
        assert_eq!(objects.of_kernel(0, "_Z1bv"), 1);
        assert_eq!(objects.of_kernel(0, "_Z1cv"), 2);
        assert_eq!(objects.of_kernel(1, "_Z1av"), 3);
        // Launched on a device whose load is not known: the latest load of the name.
        assert_eq!(objects.of_kernel(2, "_Z1cv"), 2);
        assert_eq!(objects.of_kernel(0, "_Z1zv"), 0);
    }

    #[test]
    fn the_tools_flush_module_is_its_own() {
        let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert!(is_tools_own(&names(&[
            "kreplay_l2_touch",
            "kreplay_l2_discard",
            "kreplay_l2_flush"
        ])));
        assert!(!is_tools_own(&names(&["kreplay_l2_touch", "_Z1av"])));
        assert!(
            !is_tools_own(&[]),
            "an unreadable image is the application's"
        );
    }
}
