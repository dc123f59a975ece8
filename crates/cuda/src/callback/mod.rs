//! What CUPTI hands a callback, read through typed decoders: the callback ids the tool tells
//! apart ([`ids`]), the data by domain ([`domain`]),
//! a driver call's name, result and kernel symbol ([`driver`]), a resource event
//! ([`resource`]), the parameter blocks of copies, memsets, frees and unloads ([`calls`]), of
//! copies for the memory-copy trace ([`copies`]), of allocations and frees ([`memory`]) and of the calls that change or launch an executable
//! graph ([`graph`]); the argument values the API trace records ([`args`]); an NVTX call ([`nvtx`]); and the subscription itself ([`subscribe`]). The raw layouts
//! (`generated_cuda_meta.h`, `cupti_callbacks.h`) are read here only; the interception decides
//! what each means to the tool.

pub mod args;
pub mod calls;
pub mod copies;
pub mod domain;
pub mod driver;
pub mod graph;
pub mod ids;
pub mod memory;
pub mod nvtx;
pub mod resource;
pub mod subscribe;
