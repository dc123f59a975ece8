// Probe (issue 18): a one-block kernel of 4 warps, launched N times, alone or after a kernel
// that fills every SM, with or without a host sync after each. One execution of it can never
// average more than 4 active warps per active SM cycle; a profiler whose range counts anything
// else (another kernel's tail, its own work) can. Usage: one_block N MODE (MODE bit 0: a
// full-GPU kernel before each; bit 1: cudaDeviceSynchronize after each). Prints a checksum.
#include <cstdio>
#include <cstdlib>

__global__ void one_block(float *x, int steps) {
    float v = x[threadIdx.x];
    for (int k = 0; k < steps; ++k) v = v * 1.0001f + 0.5f;
    x[threadIdx.x] = v;
}

__global__ void whole_gpu(float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * 0.5f + 1.0f;
}

int main(int argc, char **argv) {
    int launches = argc > 1 ? atoi(argv[1]) : 20;
    int mode = argc > 2 ? atoi(argv[2]) : 1;
    const int n = 1 << 24;
    float *x, *y;
    cudaMalloc(&x, 128 * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMemset(x, 0, 128 * sizeof(float));
    cudaMemset(y, 0, n * sizeof(float));
    for (int i = 0; i < launches; ++i) {
        if (mode & 1) whole_gpu<<<n / 256, 256>>>(y, n);
        one_block<<<1, 128>>>(x, 200);
        if (mode & 2) cudaDeviceSynchronize();
    }
    float h[128];
    cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost);
    double sum = 0;
    for (float v : h) sum += v;
    printf("checksum %.6f\n", sum);
    return cudaDeviceSynchronize() != cudaSuccess;
}
