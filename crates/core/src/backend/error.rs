//! Why a device could not do what the engine asked.

use crate::backend::memory::DeviceId;
use kreplay_format::Staging;
use std::time::Duration;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum BackendError {
    /// The staging place has no room for the snapshot; the engine tries the next place.
    #[error("not enough {0:?} memory to stage {1} bytes")]
    OutOfStagingMemory(Staging, u64),
    /// A drain did not finish within its deadline.
    #[error("device {device} did not become idle within {deadline:?}")]
    DrainTimeout {
        device: DeviceId,
        deadline: Duration,
    },
    /// Anything else, with the API call that failed.
    #[error("{0}")]
    Failed(String),
}
