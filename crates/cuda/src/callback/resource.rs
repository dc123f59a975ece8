//! A resource-domain callback (`CUpti_ResourceData`), decoded by its callback id: the events the
//! tool follows, with what each event's descriptor holds.

use crate::CUcontext;
use kreplay_cupti_sys as sys;
use std::ffi::c_void;

/// What CUPTI passes a resource callback, valid during that callback only (CUPTI's
/// `CUpti_ResourceData`).
#[repr(transparent)]
pub struct ResourceData(sys::CUpti_ResourceData);

impl ResourceData {
    /// The data behind CUPTI's pointer.
    ///
    /// # Safety
    /// `raw` is the data CUPTI passed to a resource callback, used during it.
    pub unsafe fn from_raw<'a>(raw: *const c_void) -> &'a ResourceData {
        // SAFETY: `ResourceData` is a transparent wrapper (the caller's contract for the rest).
        unsafe { &*(raw as *const ResourceData) }
    }

    /// The context the event is about (or in).
    pub fn context(&self) -> CUcontext {
        self.0.context
    }

    /// What the callback `cbid` is about ([`resource_event`]).
    pub fn event(&self, cbid: u32) -> ResourceEvent<'_> {
        resource_event(cbid, &self.0)
    }
}

/// A resource event the tool follows.
#[derive(Debug, Clone, Copy)]
pub enum ResourceEvent<'a> {
    /// A module was loaded: its cubin (`None` when CUPTI gives none).
    ModuleLoaded {
        cubin: Option<&'a [u8]>,
    },
    /// An executable graph was instantiated from `graph` (either may be NULL).
    GraphExecCreated {
        graph: sys::CUgraph,
        exec: sys::CUgraphExec,
    },
    /// An executable graph is about to be destroyed.
    GraphExecDestroying {
        exec: sys::CUgraphExec,
    },
    ContextCreated,
    ContextDestroying,
    /// A stream is about to be destroyed (its handle may be given to a new stream after).
    StreamDestroying,
    /// Anything else (or a graph event without its descriptor).
    Other,
}

/// What the resource callback `cbid` with `data` is about.
pub fn resource_event(cbid: u32, data: &sys::CUpti_ResourceData) -> ResourceEvent<'_> {
    match cbid {
        sys::CUpti_CallbackIdResource_CUPTI_CBID_RESOURCE_MODULE_LOADED => {
            let module = data.resourceDescriptor as *const sys::CUpti_ModuleResourceData;
            // SAFETY: CUPTI's module descriptor for this id; the cubin is valid during the
            // callback, the lifetime of `data`.
            let cubin = unsafe {
                module.as_ref().and_then(|m| {
                    (!m.pCubin.is_null() && m.cubinSize != 0)
                        .then(|| std::slice::from_raw_parts(m.pCubin as *const u8, m.cubinSize))
                })
            };
            ResourceEvent::ModuleLoaded { cubin }
        }
        sys::CUpti_CallbackIdResource_CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED => {
            match graph_data(data) {
                Some(graph) => ResourceEvent::GraphExecCreated {
                    graph: graph.graph,
                    exec: graph.graphExec,
                },
                None => ResourceEvent::Other,
            }
        }
        sys::CUpti_CallbackIdResource_CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING => {
            match graph_data(data) {
                Some(graph) => ResourceEvent::GraphExecDestroying {
                    exec: graph.graphExec,
                },
                None => ResourceEvent::Other,
            }
        }
        sys::CUpti_CallbackIdResource_CUPTI_CBID_RESOURCE_CONTEXT_CREATED => {
            ResourceEvent::ContextCreated
        }
        sys::CUpti_CallbackIdResource_CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING => {
            ResourceEvent::ContextDestroying
        }
        sys::CUpti_CallbackIdResource_CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING => {
            ResourceEvent::StreamDestroying
        }
        _ => ResourceEvent::Other,
    }
}

/// The descriptor of a graph-executable event (only ever called for those ids).
fn graph_data(data: &sys::CUpti_ResourceData) -> Option<&sys::CUpti_GraphData> {
    // SAFETY: CUPTI passes a CUpti_GraphData for graph-executable resource callbacks.
    unsafe { (data.resourceDescriptor as *const sys::CUpti_GraphData).as_ref() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_events_read_their_descriptors() {
        let cubin = [0x7fu8, b'E', b'L', b'F'];
        let mut empty = sys::CUpti_ModuleResourceData::default();
        let mut module = sys::CUpti_ModuleResourceData {
            pCubin: cubin.as_ptr().cast(),
            cubinSize: cubin.len(),
            ..Default::default()
        };
        let mut data = sys::CUpti_ResourceData::default();
        let loaded = sys::CUpti_CallbackIdResource_CUPTI_CBID_RESOURCE_MODULE_LOADED;
        assert!(matches!(
            resource_event(loaded, &data),
            ResourceEvent::ModuleLoaded { cubin: None }
        ));
        data.resourceDescriptor = (&mut empty as *mut sys::CUpti_ModuleResourceData).cast();
        assert!(matches!(
            resource_event(loaded, &data),
            ResourceEvent::ModuleLoaded { cubin: None }
        ));
        data.resourceDescriptor = (&mut module as *mut sys::CUpti_ModuleResourceData).cast();
        match resource_event(loaded, &data) {
            ResourceEvent::ModuleLoaded { cubin: Some(image) } => assert_eq!(image, &cubin),
            other => panic!("{other:?}"),
        }
        let created = sys::CUpti_CallbackIdResource_CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED;
        data.resourceDescriptor = std::ptr::null_mut();
        assert!(matches!(
            resource_event(created, &data),
            ResourceEvent::Other
        ));
    }
}
