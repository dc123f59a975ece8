//! The software device's module: the one image its kernels come from, loaded onto every device
//! when a runtime starts (as CUDA loads an application's modules eagerly), and recorded as a code
//! object the way the CUDA backend records a module it sees loaded.

use kreplay_core::backend::DeviceId;
use kreplay_format::CodeObject;

/// The module's image, as an application hands the driver a cubin from memory.
static IMAGE: &[u8] = b"kreplay software device module: the kernels of kreplay_sim::workload\0";

/// The code object id of the module loaded onto `device`: one per device, from 1.
pub fn code_object_id(device: DeviceId) -> u64 {
    u64::from(device) + 1
}

/// The module loaded onto `device`, as a code object.
pub fn code_object(device: DeviceId) -> CodeObject {
    CodeObject::from_memory(
        code_object_id(device),
        u64::from(device),
        std::process::id(),
        IMAGE.as_ptr() as u64,
        IMAGE.len() as u64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_device_loads_its_own_copy_of_the_module() {
        let (first, second) = (code_object(0), code_object(1));
        assert_eq!((first.code_object_id, second.code_object_id), (1, 2));
        assert_eq!((first.agent_id, second.agent_id), (0, 1));
        assert_eq!(first.uri, second.uri);
        assert!(first
            .uri
            .starts_with(&format!("memory://{}#offset=0x", std::process::id())));
        assert!(first.uri.ends_with(&format!("&size={}", IMAGE.len())));
    }
}
