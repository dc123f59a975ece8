// Bench workload: many tiny kernels (fixed per-dispatch cost). Usage: tiny [launches=2000]
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void bump(int* v) { atomicAdd(v + threadIdx.x, 1); }

int main(int argc, char** argv) {
    int launches = argc > 1 ? atoi(argv[1]) : 2000;
    int* v;
    CHECK(cudaMalloc(&v, 32 * sizeof(int)));
    CHECK(cudaMemset(v, 0, 32 * sizeof(int)));
    CHECK(cudaDeviceSynchronize());
    auto t0 = std::chrono::steady_clock::now();
    for (int l = 0; l < launches; ++l) { bump<<<1, 32>>>(v); CHECK(cudaGetLastError()); }
    CHECK(cudaDeviceSynchronize());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    int h[32];
    CHECK(cudaMemcpy(h, v, sizeof h, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < 32; ++i) bad += h[i] != launches;
    printf("tiny: launches=%d dispatch_ms=%.3f verification %s\n", launches, ms, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
