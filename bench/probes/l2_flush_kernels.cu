// Flush recipes of bench/probes/l2_flush_recipes.cu, compiled to PTX and loaded by it.
#include <cstddef>
extern "C" __global__ void sweep_read(const char* p, size_t bytes, int* out) {
  int acc = 0;
  for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * 32; i < bytes; i += (size_t)gridDim.x * blockDim.x * 32)
    acc += *(const int*)(p + i);
  if (acc == 12345) out[0] = acc;
}
extern "C" __global__ void sweep_evl(const char* p, size_t bytes, int* out) {
  int acc = 0; unsigned long long pol;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * 32; i < bytes; i += (size_t)gridDim.x * blockDim.x * 32) {
    int v; asm volatile("ld.global.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(v) : "l"(p + i), "l"(pol)); acc += v;
  }
  if (acc == 12345) out[0] = acc;
}
extern "C" __global__ void sweep_pf_evl(const char* p, size_t bytes, int* out) {
  for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * 128; i < bytes; i += (size_t)gridDim.x * blockDim.x * 128)
    asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(p + i));
}
extern "C" __global__ void sweep_discard(char* p, size_t bytes, int* out) {
  for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * 128; i < bytes; i += (size_t)gridDim.x * blockDim.x * 128)
    asm volatile("discard.global.L2 [%0], 128;" :: "l"(p + i) : "memory");
}
// One kernel for the whole flush (recipe step `fused`): three read sweeps, then the last block to
// finish discards every line of the buffer. As a profiled kernel in the application's context it
// would be one range per flush instead of four (KREPLAY_FLUSH_IN_APPLICATION). out[1] counts the
// blocks done and is left 0 for the next flush.
extern "C" __global__ void sweep_read3_discard(char* p, size_t bytes, int* out) {
  int acc = 0;
  const size_t stride = (size_t)gridDim.x * blockDim.x * 32;
  for (int s = 0; s < 3; s++)
    for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * 32; i < bytes; i += stride) {
      int v; asm volatile("ld.global.cg.b32 %0, [%1];" : "=r"(v) : "l"(p + i)); acc += v;
    }
  if (acc == 12345) out[0] = acc;
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd((unsigned*)out + 1, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  for (size_t i = threadIdx.x * (size_t)128; i < bytes; i += (size_t)blockDim.x * 128)
    asm volatile("discard.global.L2 [%0], 128;" :: "l"(p + i) : "memory");
  if (threadIdx.x == 0) ((unsigned*)out)[1] = 0;
}
