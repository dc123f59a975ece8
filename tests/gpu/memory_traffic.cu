// Copies and allocations of every kind around kernels on two streams (NVIDIA's simpleStreams /
// asyncAPI pattern), for tests/gpu/run.py's memory section: a known number of copies per
// direction and one allocation of each kind, each freed. Prints "COPIES h2d=N d2h=N d2d=N",
// "ALLOC <kind> <address> <bytes>" per allocation, and "RESULT memory_traffic PASS|FAIL
// <details>" after checking every value against what one execution of every kernel gives; exit
// 0 or 1.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                             \
    do {                                                                                        \
        cudaError_t err_ = (call);                                                              \
        if (err_ != cudaSuccess) {                                                              \
            printf("RESULT memory_traffic FAIL %s failed: %s\n", #call, cudaGetErrorString(err_)); \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

// In place and exact: a replay that ran twice on the same input changes every value.
__global__ void step(unsigned* y, int n, unsigned add) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * 3u + add + (unsigned)i;
}

static const int N = 1 << 20, BLOCK = 256, GRID = (N + BLOCK - 1) / BLOCK, ITERATIONS = 4;
static const size_t BYTES = N * sizeof(unsigned);

int main() {
    std::vector<unsigned> pageable(N), expected(N);
    for (int i = 0; i < N; ++i) pageable[i] = expected[i] = (unsigned)i * 7u;
    unsigned *device = nullptr, *pitched = nullptr, *managed = nullptr, *pinned = nullptr,
             *pool = nullptr;
    size_t pitch = 0;
    cudaStream_t streams[2];
    for (auto& s : streams) CHECK(cudaStreamCreate(&s));
    CHECK(cudaMalloc(&device, BYTES));
    CHECK(cudaMallocPitch(&pitched, &pitch, 1024 * sizeof(unsigned), N / 1024));
    CHECK(cudaMallocManaged(&managed, BYTES));
    CHECK(cudaHostAlloc(&pinned, BYTES, cudaHostAllocDefault));
    CHECK(cudaMallocAsync(&pool, BYTES, streams[0]));
    printf("ALLOC device %p %zu\n", (void*)device, BYTES);
    printf("ALLOC pitched %p %zu\n", (void*)pitched, pitch * (N / 1024));
    printf("ALLOC managed %p %zu\n", (void*)managed, BYTES);
    printf("ALLOC host %p %zu\n", (void*)pinned, BYTES);
    printf("ALLOC pool %p %zu\n", (void*)pool, BYTES);
    int h2d = 0, d2h = 0, d2d = 0;

    // A synchronous copy from pageable memory, then on two streams: a copy in from pinned
    // memory, a kernel, a copy out, per iteration.
    CHECK(cudaMemcpy(device, pageable.data(), BYTES, cudaMemcpyHostToDevice));
    ++h2d;
    for (int it = 0; it < ITERATIONS; ++it) {
        cudaStream_t s = streams[it % 2];
        CHECK(cudaStreamSynchronize(streams[(it + 1) % 2]));
        for (int i = 0; i < N; ++i) pinned[i] = expected[i];
        CHECK(cudaMemcpyAsync(device, pinned, BYTES, cudaMemcpyHostToDevice, s));
        ++h2d;
        step<<<GRID, BLOCK, 0, s>>>(device, N, (unsigned)it);
        CHECK(cudaMemcpyAsync(pinned, device, BYTES, cudaMemcpyDeviceToHost, s));
        ++d2h;
        CHECK(cudaStreamSynchronize(s));
        for (int i = 0; i < N; ++i) expected[i] = expected[i] * 3u + (unsigned)it + (unsigned)i;
        for (int i = 0; i < N; ++i) {
            if (pinned[i] != expected[i]) {
                printf("RESULT memory_traffic FAIL iteration %d [%d] = %u, expected %u\n", it, i,
                       pinned[i], expected[i]);
                return 1;
            }
        }
    }
    // Device to device into the pool buffer, back through unified addressing, and a 2-D copy.
    CHECK(cudaStreamSynchronize(streams[0]));
    CHECK(cudaMemcpy(pool, device, BYTES, cudaMemcpyDeviceToDevice));
    ++d2d;
    CHECK(cudaMemcpy(pageable.data(), pool, BYTES, cudaMemcpyDefault));
    ++d2h;
    CHECK(cudaMemcpy2D(pitched, pitch, pageable.data(), 1024 * sizeof(unsigned),
                       1024 * sizeof(unsigned), N / 1024, cudaMemcpyHostToDevice));
    ++h2d;
    // Managed memory written by the host and a kernel: no copy call.
    for (int i = 0; i < N; ++i) managed[i] = (unsigned)i;
    step<<<GRID, BLOCK>>>(managed, N, 5u);
    CHECK(cudaDeviceSynchronize());
    bool ok = true;
    for (int i = 0; i < N && ok; ++i) ok = pageable[i] == expected[i] && managed[i] == (unsigned)i * 3u + 5u + (unsigned)i;
    CHECK(cudaFreeAsync(pool, streams[0]));
    CHECK(cudaStreamSynchronize(streams[0]));
    CHECK(cudaFree(pitched));
    CHECK(cudaFree(device));
    CHECK(cudaFree(managed));
    CHECK(cudaFreeHost(pinned));
    for (auto& s : streams) CHECK(cudaStreamDestroy(s));
    printf("COPIES h2d=%d d2h=%d d2d=%d\n", h2d, d2h, d2d);
    printf("RESULT memory_traffic %s values %s\n", ok ? "PASS" : "FAIL", ok ? "as one execution" : "differ");
    return ok ? 0 : 1;
}
