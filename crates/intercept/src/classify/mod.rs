//! What a driver call means to the tool, in one place, unit-tested without a GPU. By callback id:
//! a launch, an allocation or a free of some kind ([`classify_driver_cbid`]), a host wait
//! ([`is_blocking_wait`]), a capture's beginning, a module's unloading, a pure query. By name, for
//! the hundreds of other calls, in families: what a call does to device memory
//! ([`classify_call`]) and whether it changes an executable graph ([`changes_graph_exec`]). And
//! which kernels wait on peers ([`kreplay_backend::modules::is_collective_kernel`]).

mod addresses;
mod effects;
mod events;
mod queries;

pub use addresses::call_addresses;
pub use effects::{changes_graph_exec, classify_call, CallKind};
pub use events::{alloc_kind, classify_driver_cbid, AllocApi, DriverEvent, FreeApi};
pub use kreplay_cuda::launch::LaunchApi;
pub use queries::{
    is_blocking_wait, is_capture_begin, is_capture_end, is_query_only, unloaded_module,
};
