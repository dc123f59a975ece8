// Bench workload: the sync loop's iteration (syncloop.cu: an in-place update and a two-level
// deterministic sum) captured once into a CUDA graph with a fourth kernel that stores the sum
// into a results array at the iteration the host copies in before each launch; the graph is
// launched once per iteration with a stream synchronisation after each, like graph-based solver
// loops (NVIDIA's jacobiCudaGraphs). Prints every iteration's sum bit for bit (%a).
// Usage: graphloop [iterations=70] (4 kernel nodes per launch)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

const int THREADS = 256;

__global__ void step(float* x, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a + 0.25f;
}

__global__ void partial_sums(const float* x, int n, float* partial) {
    __shared__ float s[THREADS];
    int i = blockIdx.x * blockDim.x * 4 + threadIdx.x;
    float v = 0.0f;
    for (int k = 0; k < 4; ++k, i += blockDim.x) v += i < n ? x[i] : 0.0f;
    s[threadIdx.x] = v;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

__global__ void final_sum(const float* partial, int m, float* out) {
    __shared__ float s[THREADS];
    float v = 0.0f;
    for (int i = threadIdx.x; i < m; i += blockDim.x) v += partial[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = s[0];
}

__global__ void store(const float* sum, float* results, const int* it) { results[*it] = *sum; }

int main(int argc, char** argv) {
    int iterations = argc > 1 ? atoi(argv[1]) : 70;
    const int n = 1 << 22;  // 16 MiB of floats
    const int blocks = (n + THREADS - 1) / THREADS, partials = (n + THREADS * 4 - 1) / (THREADS * 4);
    float *x, *partial, *sum, *results;
    int* it_d;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&partial, partials * sizeof(float)));
    CHECK(cudaMalloc(&sum, sizeof(float)));
    CHECK(cudaMalloc(&results, iterations * sizeof(float)));
    CHECK(cudaMalloc(&it_d, sizeof(int)));
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)(i % 1000) / 1000.0f;
    CHECK(cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    // One iteration, captured: the iteration number is read from device memory, which the host
    // sets with a copy before each launch.
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    step<<<blocks, THREADS, 0, s>>>(x, n, 0.999f);
    partial_sums<<<partials, THREADS, 0, s>>>(x, n, partial);
    final_sum<<<1, THREADS, 0, s>>>(partial, partials, sum);
    store<<<1, 1, 0, s>>>(sum, results, it_d);
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaDeviceSynchronize());
    auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < iterations; ++it) {
        CHECK(cudaMemcpyAsync(it_d, &it, sizeof(int), cudaMemcpyHostToDevice, s));
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaStreamSynchronize(s));
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    float* r = (float*)malloc(iterations * sizeof(float));
    CHECK(cudaMemcpy(r, results, iterations * sizeof(float), cudaMemcpyDeviceToHost));
    for (int it = 0; it < iterations; ++it) printf("iteration %d sum %a\n", it, r[it]);
    printf("graphloop: iterations=%d dispatches=%d dispatch_ms=%.3f\n", iterations, 4 * iterations, ms);
    return 0;
}
