//! What the backend does with a [`CudaLaunch`]: issue it again, keep a copy that outlives its
//! callback, read the parameter words that may be addresses. A `Callback` launch's parameter
//! block is valid only while its callback runs, which is where the engine asks (the type's
//! contract, [`CudaLaunch`]); an `Owned` launch is a copy.

use crate::error::CudaError;
use crate::launch::{callback_addresses, CudaLaunch, LaunchParams, OwnedLaunch};
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{CUcontext, CUstream};

impl CudaLaunch {
    /// Issues the launch again on `stream` (a callback's launch inside its callback).
    // `stream` is an opaque driver handle the driver takes, never dereferenced here.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn issue_on(&self, d: &Driver, stream: CUstream) -> Result<(), CudaError> {
        match self {
            CudaLaunch::Owned(owned) => owned.launch_on(d, stream),
            // SAFETY: `params` is the parameter block of the launch whose callback is running;
            // CUDA keeps it valid for the callback's duration.
            CudaLaunch::Callback { api, params } => unsafe {
                let p = LaunchParams::decode(*api, *params);
                p.launch(d, *api, stream, &p.attributes())
            },
        }
    }

    /// A copy that stays valid after the launch's callback: a callback's launch copied (inside
    /// its callback) with `ctx` and `stream`, an owned one cloned.
    // `ctx` and `stream` are opaque driver handles, kept in the copy, never dereferenced here.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn keep(
        &self,
        d: &Driver,
        ctx: CUcontext,
        stream: CUstream,
    ) -> Result<CudaLaunch, CudaError> {
        match self {
            CudaLaunch::Callback { api, params } => {
                // SAFETY: asked inside the launch's callback.
                let owned = unsafe { OwnedLaunch::copy(d, ctx, *api, *params, stream) }?;
                Ok(CudaLaunch::Owned(Box::new(owned)))
            }
            // A launch the tool issued itself (a graph's kernel node): already a copy.
            CudaLaunch::Owned(owned) => Ok(CudaLaunch::Owned(owned.clone())),
        }
    }

    /// The parameter words that may be addresses ([`OwnedLaunch::addresses`]).
    pub fn parameter_addresses(&self, d: &Driver) -> Vec<u64> {
        match self {
            CudaLaunch::Owned(owned) => owned.addresses(),
            // SAFETY: asked inside the launch's callback.
            CudaLaunch::Callback { api, params } => unsafe { callback_addresses(d, *api, *params) },
        }
    }
}
