//! The command line's allocator. Post-processing reads records on one thread and writes them on
//! another, each record a few short strings (an API call's name and arguments): under glibc's
//! malloc the reader's allocations and the writer's frees met on one arena's lock, and malloc and
//! free took a third of a traced run's JSON. mimalloc frees across threads without that lock
//! (docs/DECISIONS.md).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
