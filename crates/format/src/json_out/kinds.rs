//! rocprofiler-sdk's enumerations that the document names (`fwd.h`): tracing kinds, the
//! kernel-dispatch operations, the agent type; and the document's top-level key.

/// Top-level key of rocprofv3's JSON.
pub(super) const TOOL_KEY: &str = "rocprofiler-sdk-tool";

/// `rocprofiler_buffer_tracing_kind_t` (rocprofiler-sdk `fwd.h`): index = value, names as
/// `rocprofiler_query_buffer_tracing_kind_name` gives them, but for the two CUDA API kinds in
/// the slots of the HIP runtime and HSA core APIs (`CUDA_RUNTIME_API`, `CUDA_DRIVER_API`).
pub(super) const BUFFER_TRACING_KINDS: [&str; 33] = [
    "NONE",
    "CUDA_DRIVER_API",
    "HSA_AMD_EXT_API",
    "HSA_IMAGE_EXT_API",
    "HSA_FINALIZE_EXT_API",
    "CUDA_RUNTIME_API",
    "HIP_COMPILER_API",
    "MARKER_CORE_API",
    "MARKER_CONTROL_API",
    "MARKER_NAME_API",
    "MEMORY_COPY",
    "KERNEL_DISPATCH",
    "SCRATCH_MEMORY",
    "CORRELATION_ID_RETIREMENT",
    "RCCL_API",
    "OMPT",
    "MEMORY_ALLOCATION",
    "RUNTIME_INITIALIZATION",
    "ROCDECODE_API",
    "ROCJPEG_API",
    "HIP_STREAM",
    "HIP_RUNTIME_API_EXT",
    "HIP_COMPILER_API_EXT",
    "ROCDECODE_API_EXT",
    "KFD_EVENT_PAGE_MIGRATE",
    "KFD_EVENT_PAGE_FAULT",
    "KFD_EVENT_QUEUE",
    "KFD_EVENT_UNMAP_FROM_GPU",
    "KFD_EVENT_DROPPED_EVENTS",
    "KFD_PAGE_MIGRATE",
    "KFD_PAGE_FAULT",
    "KFD_QUEUE",
    "MARKER_CORE_RANGE_API",
];

/// `rocprofiler_callback_tracing_kind_t` (rocprofiler-sdk `fwd.h`): index = value.
pub(super) const CALLBACK_TRACING_KINDS: [&str; 22] = [
    "NONE",
    "HSA_CORE_API",
    "HSA_AMD_EXT_API",
    "HSA_IMAGE_EXT_API",
    "HSA_FINALIZE_EXT_API",
    "HIP_RUNTIME_API",
    "HIP_COMPILER_API",
    "MARKER_CORE_API",
    "MARKER_CONTROL_API",
    "MARKER_NAME_API",
    "CODE_OBJECT",
    "SCRATCH_MEMORY",
    "KERNEL_DISPATCH",
    "MEMORY_COPY",
    "RCCL_API",
    "OMPT",
    "MEMORY_ALLOCATION",
    "RUNTIME_INITIALIZATION",
    "ROCDECODE_API",
    "ROCJPEG_API",
    "HIP_STREAM",
    "MARKER_CORE_RANGE_API",
];

/// `ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH`: `kind` of kernel-dispatch records.
pub(super) const BUFFER_TRACING_KERNEL_DISPATCH: usize = 11;
/// `ROCPROFILER_CALLBACK_TRACING_KERNEL_DISPATCH`.
pub(super) const CALLBACK_TRACING_KERNEL_DISPATCH: usize = 12;
/// `rocprofiler_kernel_dispatch_operation_t`: index = value.
pub(super) const KERNEL_DISPATCH_OPERATIONS: [&str; 3] = [
    "KERNEL_DISPATCH_NONE",
    "KERNEL_DISPATCH_ENQUEUE",
    "KERNEL_DISPATCH_COMPLETE",
];
/// `ROCPROFILER_KERNEL_DISPATCH_COMPLETE`: the only operation of kernel-dispatch buffer records.
pub(super) const KERNEL_DISPATCH_COMPLETE: usize = 2;
/// `ROCPROFILER_AGENT_TYPE_GPU`.
pub(super) const AGENT_TYPE_GPU: u32 = 2;

/// The `size` fields rocprofv3 writes: `sizeof` of rocprofiler-sdk's C structs, computed here from
/// their field lists on x86-64 (not read from rocprofiler-sdk; readers use them only to tell
/// struct versions apart). `rocprofiler_kernel_dispatch_info_t`: five 8-byte ids, two 4-byte
/// segment sizes, two dim3, 56 bytes of padding.
pub(super) const SIZE_DISPATCH_INFO: u64 = 128;
/// `rocprofiler_dispatch_counting_service_data_t`: size, correlation id (internal, external,
/// ancestor), two timestamps, the dispatch info.
pub(super) const SIZE_DISPATCH_DATA: u64 = 8 + 24 + 16 + SIZE_DISPATCH_INFO;
/// `rocprofiler_buffer_tracing_kernel_dispatch_record_t`: size, kind and operation, thread id,
/// correlation id, two timestamps, the dispatch info.
pub(super) const SIZE_KERNEL_DISPATCH_RECORD: u64 = 8 + 8 + 8 + 24 + 16 + SIZE_DISPATCH_INFO;
/// The kernel-symbol registration data: size, kernel and code-object ids, name pointer, kernel
/// object, seven 4-byte sizes and counts (padded to 8), entry offset, kernel address.
pub(super) const SIZE_KERNEL_SYMBOL: u64 = 8 * 5 + 32 + 8 + 8;
/// `rocprofiler_agent_t` (version 0), rounded: agents' `size`.
pub(super) const SIZE_AGENT: u64 = 512;
