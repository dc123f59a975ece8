// Probe (issue 18): does a kernel run longer when the kernel before it on the SMs used another
// shared-memory configuration (the SM reconfigures its L1/shared split first)? kreplay's L2 flush
// kernel runs before every measured kernel with --cache-control all; Nsight Compute measures a
// kernel's later passes right after the same kernel. Three kernels of one block doing the same
// dependent arithmetic, differing only in shared memory: none, 272 B (as PyTorch's one-block
// reductions: 256 B dynamic, 16 B static) and 100 KiB (dynamic, opted in). Launch order, repeated
// ROUNDS times:  none, tiny, tiny, big, big, none, tiny
// so that each kernel runs after itself and after another. Usage: carveout ROUNDS. Prints a sum.
#include <cstdio>
#include <cstdlib>

const int STEPS = 4000;

__device__ float work(float v) {
    for (int k = 0; k < STEPS; ++k) v = v * 1.0001f + 0.25f;
    return v;
}

__global__ void none_smem(float *x) { x[threadIdx.x] = work(x[threadIdx.x]); }

__global__ void tiny_smem(float *x) {
    __shared__ float fixed[4];
    extern __shared__ float dynamic[];
    dynamic[threadIdx.x] = x[threadIdx.x];
    if (threadIdx.x < 4) fixed[threadIdx.x] = 1.0f;
    __syncthreads();
    x[threadIdx.x] = work(dynamic[threadIdx.x]) * fixed[threadIdx.x % 4];
}

__global__ void big_smem(float *x) {
    extern __shared__ float dynamic[];
    dynamic[threadIdx.x * 64] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = work(dynamic[threadIdx.x * 64]);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    const int threads = 64, big = 100 << 10;
    float *x;
    cudaMalloc(&x, threads * sizeof(float));
    cudaMemset(x, 0, threads * sizeof(float));
    cudaFuncSetAttribute(big_smem, cudaFuncAttributeMaxDynamicSharedMemorySize, big);
    for (int r = 0; r < rounds; ++r) {
        none_smem<<<1, threads>>>(x);
        tiny_smem<<<1, threads, 256>>>(x);
        tiny_smem<<<1, threads, 256>>>(x);
        big_smem<<<1, threads, big>>>(x);
        big_smem<<<1, threads, big>>>(x);
        none_smem<<<1, threads>>>(x);
        tiny_smem<<<1, threads, 256>>>(x);
    }
    float h[threads];
    cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost);
    double sum = 0;
    for (float v : h) sum += v;
    printf("sum %.3f\n", sum);
    return cudaDeviceSynchronize() != cudaSuccess;
}
