// Bench workload: conjugate gradient on a tridiagonal matrix (matrix-free SpMV
// kernel) with cuBLAS for the vector work, dot products returned to the HOST every iteration
// (cuBLAS's default pointer mode), like NVIDIA's `conjugateGradient` sample. Prints every
// iteration's residual bit for bit (%a). Usage: solver [iterations=30] [n=1048576]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)
#define CHECK_BLAS(x) do { cublasStatus_t s = (x); if (s != CUBLAS_STATUS_SUCCESS) { \
    fprintf(stderr, "%s:%d %s: cuBLAS status %d\n", __FILE__, __LINE__, #x, (int)s); exit(1); } } while (0)

// y = A x with A = tridiag(-1, 4, -1) (well conditioned: the residual falls every iteration).
__global__ void laplacian(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = 4.0f * x[i];
    if (i > 0) v -= x[i - 1];
    if (i + 1 < n) v -= x[i + 1];
    y[i] = v;
}

int main(int argc, char** argv) {
    int iterations = argc > 1 ? atoi(argv[1]) : 30;
    int n = argc > 2 ? atoi(argv[2]) : 1 << 20;
    float *x, *r, *p, *ap;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&r, n * sizeof(float)));
    CHECK(cudaMalloc(&p, n * sizeof(float)));
    CHECK(cudaMalloc(&ap, n * sizeof(float)));
    float* b = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) b[i] = 1.0f + (float)(i % 7) / 7.0f;
    cublasHandle_t blas;
    CHECK_BLAS(cublasCreate(&blas));
    CHECK(cudaMemset(x, 0, n * sizeof(float)));
    CHECK(cudaMemcpy(r, b, n * sizeof(float), cudaMemcpyHostToDevice));  // r = b - A*0
    CHECK(cudaMemcpy(p, r, n * sizeof(float), cudaMemcpyDeviceToDevice));
    float rr;
    CHECK_BLAS(cublasSdot(blas, n, r, 1, r, 1, &rr));
    auto t0 = std::chrono::steady_clock::now();
    const int threads = 256, blocks = (n + threads - 1) / threads;
    for (int it = 0; it < iterations; ++it) {
        laplacian<<<blocks, threads>>>(p, ap, n);
        float pap;
        CHECK_BLAS(cublasSdot(blas, n, p, 1, ap, 1, &pap));  // scalar back to the host
        float alpha = rr / pap, minus_alpha = -alpha;
        CHECK_BLAS(cublasSaxpy(blas, n, &alpha, p, 1, x, 1));
        CHECK_BLAS(cublasSaxpy(blas, n, &minus_alpha, ap, 1, r, 1));
        float rr_new;
        CHECK_BLAS(cublasSdot(blas, n, r, 1, r, 1, &rr_new));  // scalar back to the host
        float beta = rr_new / rr;
        CHECK_BLAS(cublasSscal(blas, n, &beta, p, 1));
        float one = 1.0f;
        CHECK_BLAS(cublasSaxpy(blas, n, &one, r, 1, p, 1));
        rr = rr_new;
        printf("iteration %d residual %a\n", it, rr);
    }
    CHECK(cudaDeviceSynchronize());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    float x0;
    CHECK(cudaMemcpy(&x0, x, sizeof(float), cudaMemcpyDeviceToHost));
    printf("solver: iterations=%d n=%d x0=%a dispatch_ms=%.3f\n", iterations, n, x0, ms);
    CHECK_BLAS(cublasDestroy(blas));
    return 0;
}
