//! What the software device refuses: a fault, a free of no allocation, running out of memory.

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
