// Bench workload: an in-place kernel over a 64 MiB buffer, launched N times.
// Usage: inplace [launches=20] [untouched_gib=0]
// Footprint: the 64 MiB buffer plus a 64 MiB input (128 MiB), plus `untouched_gib` GiB of
// allocations no kernel touches (they still count in kernel replay's snapshot scope).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <chrono>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void axpy_inplace(float* y, const float* x, float a, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

int main(int argc, char** argv) {
    int launches = argc > 1 ? atoi(argv[1]) : 20;
    int untouched_gib = argc > 2 ? atoi(argv[2]) : 0;
    const size_t n = (64u << 20) / sizeof(float);
    float *x, *y;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    std::vector<void*> extra;
    for (int g = 0; g < untouched_gib; ++g) {
        void* p; CHECK(cudaMalloc(&p, 1ull << 30)); CHECK(cudaMemset(p, g, 1ull << 30)); extra.push_back(p);
    }
    std::vector<float> hx(n), hy(n);
    for (size_t i = 0; i < n; ++i) { hx[i] = (float)(i % 7) * 0.5f; hy[i] = (float)(i % 13); }
    CHECK(cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(y, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaDeviceSynchronize());
    auto t0 = std::chrono::steady_clock::now();
    for (int l = 0; l < launches; ++l) {
        axpy_inplace<<<(unsigned)((n + 255) / 256), 256>>>(y, x, 1.0f, n);
        CHECK(cudaGetLastError());
    }
    CHECK(cudaDeviceSynchronize());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::vector<float> out(n);
    CHECK(cudaMemcpy(out.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) if (out[i] != hy[i] + launches * hx[i]) ++bad;
    printf("inplace: launches=%d untouched_gib=%d dispatch_ms=%.3f verification %s (%zu wrong)\n",
           launches, untouched_gib, ms, bad ? "FAILED" : "PASSED", bad);
    for (void* p : extra) CHECK(cudaFree(p));
    return bad ? 1 : 0;
}
