// Memory-bound kernels for the counter-fidelity checks (tests/gpu/run.py, section fidelity):
// a streaming copy larger than L2, an in-place update smaller than L2, and a cuBLAS SGEMM, each
// run ITERATIONS times with a host sync after every kernel. Prints a checksum of every result,
// which must not change under replay. MEMORY_BOUND_GAP_US=N sleeps N microseconds after every sync
// (docs/DECISIONS.md: does the time between kernels change what L2 holds dirty?).
// MEMORY_BOUND_EXTRA_MB=N allocates N MiB more after the program's buffers and leaves them
// unused, and MEMORY_BOUND_PRECOPY=1 then copies every buffer into them once before the loop, as
// a replay's start snapshot does (dram_write.py: is it the device staging's footprint, or the
// snapshot's copy, that changes what the in-place update writes back?). Both off by default.
// MEMORY_BOUND_CLEAN=rdma|writevalue|d2h follows every sync with one operation that might write
// L2's dirty lines back (a GPUDirect RDMA write flush, a stream memory write, a 4-byte copy to the
// host): which, if any, leaves the next kernel what a profiler start per kernel leaves it?
// MEMORY_BOUND_SEPARATOR=1 launches an empty kernel (one warp) right before each kernel: under a
// profiler that measures several kernels as ranges of one start, does what happened between two
// kernels (the earlier kernel's last write-backs) land in the next range, the empty kernel's?
#include <cuda.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <string>
#include <utility>
#include <vector>

#define CK(x) do { auto e = (x); if (e) { fprintf(stderr, "%s:%d: error %d\n", __FILE__, __LINE__, (int)e); exit(1); } } while (0)

__global__ void stream_copy(const float4* __restrict__ src, float4* __restrict__ dst, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) dst[i] = src[i];
}
__global__ void inplace_update(float4* y, size_t n, float a) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float4 v = y[i]; v.x = v.x * a + 1.f; v.y = v.y * a + 1.f; v.z = v.z * a + 1.f; v.w = v.w * a + 1.f; y[i] = v;
  }
}

__global__ void separator() {}

static double checksum(const float* d, size_t n) {
  std::vector<float> h(n); CK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
  double s = 0; for (size_t i = 0; i < n; i += 97) s += h[i] * (double)((i % 13) + 1); return s;
}

int main(int argc, char** argv) {
  int iterations = argc > 1 ? atoi(argv[1]) : 3;
  const size_t copy_bytes = 256u << 20, inplace_bytes = 16u << 20; const int m = 2048;
  float *src, *dst, *y, *A, *B, *C;
  CK(cudaMalloc(&src, copy_bytes)); CK(cudaMalloc(&dst, copy_bytes)); CK(cudaMalloc(&y, inplace_bytes));
  CK(cudaMalloc(&A, m * m * 4)); CK(cudaMalloc(&B, m * m * 4)); CK(cudaMalloc(&C, m * m * 4));
  {
    std::vector<float> h(copy_bytes / 4); for (size_t i = 0; i < h.size(); i++) h[i] = (float)((i * 2654435761u) % 1000) / 1000.f;
    CK(cudaMemcpy(src, h.data(), copy_bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(y, h.data(), inplace_bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(A, h.data(), m * m * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(B, h.data() + m * m, m * m * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(C, 0, m * m * 4)); CK(cudaMemset(dst, 0, copy_bytes));
  }
  const size_t extra_bytes = (size_t)atoi(getenv("MEMORY_BOUND_EXTRA_MB") ? getenv("MEMORY_BOUND_EXTRA_MB") : "0") << 20;
  char* extra = nullptr;
  if (extra_bytes) CK(cudaMalloc(&extra, extra_bytes));
  if (getenv("MEMORY_BOUND_PRECOPY")) {
    const std::pair<const void*, size_t> buffers[] = {{src, copy_bytes}, {dst, copy_bytes}, {y, inplace_bytes},
                                                       {A, m * m * 4}, {B, m * m * 4}, {C, m * m * 4}};
    size_t at = 0;
    for (auto [p, n] : buffers) {
      if (at + n > extra_bytes) { fprintf(stderr, "MEMORY_BOUND_PRECOPY needs MEMORY_BOUND_EXTRA_MB >= %zu\n", (at + n) >> 20); exit(2); }
      CK(cudaMemcpy(extra + at, p, n, cudaMemcpyDeviceToDevice)); at += n;
    }
    CK(cudaDeviceSynchronize());
  }
  cublasHandle_t handle; CK(cublasCreate(&handle));
  const float alpha = 1.f, beta = 0.5f;
  const char* gap_env = getenv("MEMORY_BOUND_GAP_US");
  const useconds_t gap = gap_env ? (useconds_t)atoi(gap_env) : 0;
  const char* clean_env = getenv("MEMORY_BOUND_CLEAN");
  const std::string clean = clean_env ? clean_env : "";
  if (!clean.empty() && clean != "rdma" && clean != "writevalue" && clean != "d2h") {
    fprintf(stderr, "MEMORY_BOUND_CLEAN=%s: use rdma, writevalue or d2h\n", clean.c_str()); exit(2);
  }
  const bool separate = getenv("MEMORY_BOUND_SEPARATOR") != nullptr;
  auto before_kernel = [&] { if (separate) separator<<<1, 32>>>(); };
  unsigned* word = nullptr;
  CK(cudaMallocHost(&word, sizeof(unsigned)));
  auto sync = [&] {
    CK(cudaDeviceSynchronize());
    if (clean == "rdma") CK(cudaDeviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTargetCurrentDevice, cudaFlushGPUDirectRDMAWritesToOwner));
    if (clean == "writevalue") CK(cuStreamWriteValue32(nullptr, (CUdeviceptr)(C), 0u, 0));
    if (clean == "d2h") CK(cudaMemcpy(word, y, sizeof(unsigned), cudaMemcpyDeviceToHost));
    if (!clean.empty()) CK(cudaDeviceSynchronize());
    if (gap) usleep(gap);
  };
  for (int it = 0; it < iterations; it++) {
    before_kernel();
    stream_copy<<<132 * 8, 512>>>((const float4*)src, (float4*)dst, copy_bytes / 16);
    sync();
    before_kernel();
    inplace_update<<<132 * 4, 512>>>((float4*)y, inplace_bytes / 16, 0.5f);
    sync();
    before_kernel();
    CK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &alpha, A, m, B, m, &beta, C, m));
    sync();
  }
  printf("copy %.6e\ninplace %.6e\ngemm %.6e\n", checksum(dst, copy_bytes / 4), checksum(y, inplace_bytes / 4), checksum(C, (size_t)m * m));
  CK(cublasDestroy(handle));
  if (extra) CK(cudaFree(extra));
  CK(cudaFreeHost(word));
  return 0;
}
