/* Everything kreplay binds: the CUDA driver API and CUPTI (callbacks, Range Profiler, Profiler
   Host and Target, Checkpoint). cupti.h already includes generated_cuda_meta.h (the callback
   parameter structs) and has no include guard, so it is included exactly once. */
#include <cuda.h>
#include <cupti.h>
#include <cupti_target.h>
#include <cupti_profiler_target.h>
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>
#include <cupti_checkpoint.h>
