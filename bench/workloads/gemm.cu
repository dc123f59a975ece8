// Bench workload: cuBLAS SGEMM, C = A*B + C (in place on C), N launches. Usage: gemm [launches=20] [n=4096]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <chrono>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)
#define CHECK_BLAS(x) do { cublasStatus_t s = (x); if (s != CUBLAS_STATUS_SUCCESS) { \
    fprintf(stderr, "%s:%d %s: cublas status %d\n", __FILE__, __LINE__, #x, (int)s); exit(1); } } while (0)

int main(int argc, char** argv) {
    int launches = argc > 1 ? atoi(argv[1]) : 20;
    int n = argc > 2 ? atoi(argv[2]) : 4096;
    size_t elems = (size_t)n * n;
    std::vector<float> h(elems);
    for (size_t i = 0; i < elems; ++i) h[i] = (float)((i * 2654435761u) % 17) / 17.0f - 0.5f;
    float *a, *b, *c;
    CHECK(cudaMalloc(&a, elems * 4)); CHECK(cudaMalloc(&b, elems * 4)); CHECK(cudaMalloc(&c, elems * 4));
    CHECK(cudaMemcpy(a, h.data(), elems * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, h.data(), elems * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(c, 0, elems * 4));
    cublasHandle_t handle;
    CHECK_BLAS(cublasCreate(&handle));
    CHECK_BLAS(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH));  // deterministic, no tf32
    const float alpha = 1.0f, beta = 1.0f;
    CHECK(cudaDeviceSynchronize());
    auto t0 = std::chrono::steady_clock::now();
    for (int l = 0; l < launches; ++l)
        CHECK_BLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, n, b, n, &beta, c, n));
    CHECK(cudaDeviceSynchronize());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::vector<float> out(elems);
    CHECK(cudaMemcpy(out.data(), c, elems * 4, cudaMemcpyDeviceToHost));
    double checksum = 0;
    for (size_t i = 0; i < elems; i += 4097) checksum += out[i];
    printf("gemm: launches=%d n=%d dispatch_ms=%.3f checksum=%.6f\n", launches, n, ms, checksum);
    cublasDestroy(handle);
    return 0;
}
