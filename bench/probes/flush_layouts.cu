// The fused L2 flush (crates/cuda/src/flush/l2_flush.ptx, as flush.rs writes it out) in one
// layout, alone in a program of its own: bench/probes/flush_layouts.py runs it.
// Usage: flush_layouts MODULE.ptx GPC DISCARD MODE [ITERATIONS]
//   GPC, DISCARD: the kernel's flush_gpc and flush_discard (DISCARD 2: a cooperative launch on as
//   many blocks as fit at once, up to 8 per SM, as flush.rs does);
//   MODE time:  prints the flush's median and minimum time (events), each flush after a 16 MiB
//               device-to-device copy (the restore before a measured kernel);
//   MODE state: per iteration [copy, flush, victim_inplace], [copy, flush, victim_read of the
//               copied buffer], [flush, victim_read of the flush buffer], for Nsight Compute
//               (-k regex:victim) to measure what the flush left in L2.
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#define CK(x) do { auto e = (x); if (e) { fprintf(stderr, "%s:%d: error %d\n", __FILE__, __LINE__, (int)e); exit(1); } } while (0)

__global__ void victim_inplace(float4* y, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float4 v = y[i]; v.x = v.x * 0.5f + 1.f; v.y = v.y * 0.5f + 1.f; v.z += 1.f; v.w += 1.f; y[i] = v;
  }
}
__global__ void victim_read(const char* p, size_t bytes, int* out) {
  int acc = 0;
  for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * 32; i < bytes; i += (size_t)gridDim.x * blockDim.x * 32)
    acc += *(const volatile int*)(p + i);
  if (acc == 12345) out[0] = acc;
}

int main(int argc, char** argv) {
  if (argc < 5) { fprintf(stderr, "usage: %s MODULE.ptx GPC DISCARD time|state [ITERATIONS]\n", argv[0]); return 2; }
  unsigned gpc = atoi(argv[2]), discard = atoi(argv[3]);
  std::string mode = argv[4];
  int iterations = argc > 5 ? atoi(argv[5]) : (mode == "time" ? 30 : 3);
  CK(cudaFree(0));
  std::ifstream file(argv[1]); std::stringstream text; text << file.rdbuf();
  std::string ptx = text.str();
  CUmodule module; CUfunction flush;
  CK(cuModuleLoadData(&module, ptx.c_str()));
  CK(cuModuleGetFunction(&flush, module, "kreplay_l2_flush"));
  int dev = 0, l2 = 0, sms = 0, coop = 0, per_sm = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, flush, 512, 0));
  unsigned long long bytes = ((unsigned long long)l2 * 5 / 4 + 127) / 128 * 128;
  unsigned blocks = discard == 2 ? sms * std::min(per_sm, 8) : sms * 8;
  fprintf(stderr, "L2 %d B, %d SMs, %d blocks of 512 fit an SM, cooperative %d: %u blocks\n", l2, sms, per_sm, coop, blocks);
  char* buffer; CK(cudaMalloc(&buffer, bytes + 128)); CK(cudaMemset(buffer, 0, bytes + 128));
  const size_t victim_bytes = 16u << 20;
  float *y, *s; int* out;
  CK(cudaMalloc(&y, victim_bytes)); CK(cudaMalloc(&s, victim_bytes)); CK(cudaMalloc(&out, 4));
  CK(cudaMemset(s, 0, victim_bytes)); CK(cudaMemset(y, 0, victim_bytes));
  CUdeviceptr p = (CUdeviceptr)buffer, counter = p + bytes;
  unsigned sweeps = 3;
  void* args[] = {&p, &bytes, &sweeps, &discard, &counter, &gpc};
  auto run_flush = [&] {
    if (discard == 2) CK(cuLaunchCooperativeKernel(flush, blocks, 1, 1, 512, 1, 1, 0, 0, args));
    else CK(cuLaunchKernel(flush, blocks, 1, 1, 512, 1, 1, 0, 0, args, nullptr));
  };
  auto copy = [&] { CK(cudaMemcpyAsync(y, s, victim_bytes, cudaMemcpyDeviceToDevice)); };
  if (mode == "time") {
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int i = 0; i < iterations + 3; i++) {
      copy(); CK(cudaEventRecord(a)); run_flush(); CK(cudaEventRecord(b)); CK(cudaDeviceSynchronize());
      float t; CK(cudaEventElapsedTime(&t, a, b)); if (i >= 3) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    printf("flush gpc %u discard %u: median %.1f us, min %.1f us over %zu\n", gpc, discard, ms[ms.size() / 2] * 1e3, ms[0] * 1e3, ms.size());
  } else {
    for (int i = 0; i < iterations; i++) {
      copy(); run_flush(); victim_inplace<<<sms * 8, 512>>>((float4*)y, victim_bytes / 16); CK(cudaDeviceSynchronize());
      copy(); run_flush(); victim_read<<<sms * 8, 512>>>((const char*)y, victim_bytes, out); CK(cudaDeviceSynchronize());
      run_flush(); victim_read<<<sms * 8, 512>>>(buffer, bytes, out); CK(cudaDeviceSynchronize());
    }
  }
  CK(cudaGetLastError());
  return 0;
}
