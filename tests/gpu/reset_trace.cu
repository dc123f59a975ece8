// GPU check program (trace section): 200 kernels launched, the device reset while they may still
// run (its primary context destroyed), then 200 more in a new context. Each kernel must keep its
// row under --kernel-trace alone, timed by CUPTI's records, which come after the context went.
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); return 1; } } while (0)

__global__ void spin(int* v, int n) { for (int i = 0; i < n; ++i) atomicAdd(v + threadIdx.x, 1); }

int main() {
    for (int round = 0; round < 2; ++round) {
        int* v;
        CHECK(cudaMalloc(&v, 32 * sizeof(int)));
        CHECK(cudaMemset(v, 0, 32 * sizeof(int)));
        for (int i = 0; i < 200; ++i) spin<<<1, 32>>>(v, 100);
        CHECK(cudaGetLastError());
        if (round == 0) {
            CHECK(cudaDeviceReset());
        } else {
            int h[32];
            CHECK(cudaMemcpy(h, v, sizeof h, cudaMemcpyDeviceToHost));
            printf("RESULT reset_trace %s (%d per thread)\n", h[0] == 200 * 100 ? "PASS" : "FAIL", h[0]);
        }
    }
    return 0;
}
