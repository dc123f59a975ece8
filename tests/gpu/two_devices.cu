// Two GPUs driven by one process (issue 17's single-process part), for tests/gpu/run.py's
// multigpu section: argv[1] = "alternate" (one thread switching devices between launches) or
// "threads" (a thread per device). Each device updates its own buffer in place with a kernel
// and reads one value back after each launch; at the end device 1's buffer is copied to device
// 0 (cudaMemcpyPeer) and updated there once more. Every value is checked against what ONE
// execution of every kernel gives: "RESULT two_devices PASS|FAIL <details>", exit 0 or 1; with
// fewer than two GPUs "RESULT two_devices SKIP devices=N", exit 0.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess) {                                                           \
            printf("RESULT two_devices FAIL %s failed: %s\n", #call, cudaGetErrorString(err_)); \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

// In place and exact (unsigned arithmetic wraps): a replay that ran on restored memory twice,
// or on another device's state, changes every value.
__global__ void step(unsigned* y, int n, unsigned mul, unsigned add) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * mul + add + (unsigned)i;
}

static const int N = 1 << 20, BLOCK = 256, GRID = (N + BLOCK - 1) / BLOCK, ITERATIONS = 12;

static unsigned mul_of(int device) { return 3u + 2u * (unsigned)device; }

static void expect_step(std::vector<unsigned>& y, unsigned mul, unsigned add) {
    for (int i = 0; i < N; ++i) y[i] = y[i] * mul + add + (unsigned)i;
}

// One device's iterations: a launch, then one value read back (a synchronising copy).
static bool run_device(int device, unsigned* y, std::vector<unsigned>& heads) {
    if (cudaSetDevice(device) != cudaSuccess) return false;
    for (int it = 0; it < ITERATIONS; ++it) {
        step<<<GRID, BLOCK>>>(y, N, mul_of(device), (unsigned)it);
        unsigned head = 0;
        if (cudaMemcpy(&head, y + 7, sizeof(head), cudaMemcpyDeviceToHost) != cudaSuccess) return false;
        heads.push_back(head);
    }
    return true;
}

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    const char* mode = argc > 1 ? argv[1] : "alternate";
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 2) {
        printf("RESULT two_devices SKIP devices=%d\n", devices);
        return 0;
    }
    std::vector<unsigned> init(N);
    for (int i = 0; i < N; ++i) init[i] = (unsigned)(i * 2654435761u);
    unsigned* y[2];
    unsigned* copy_on_0;
    for (int d = 0; d < 2; ++d) {
        CHECK(cudaSetDevice(d));
        CHECK(cudaMalloc(&y[d], N * sizeof(unsigned)));
        CHECK(cudaMemcpy(y[d], init.data(), N * sizeof(unsigned), cudaMemcpyHostToDevice));
    }
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc(&copy_on_0, N * sizeof(unsigned)));

    std::vector<unsigned> heads[2];
    if (strcmp(mode, "threads") == 0) {
        bool ok[2] = {false, false};
        std::thread t0([&] { ok[0] = run_device(0, y[0], heads[0]); });
        std::thread t1([&] { ok[1] = run_device(1, y[1], heads[1]); });
        t0.join();
        t1.join();
        if (!ok[0] || !ok[1]) {
            printf("RESULT two_devices FAIL a CUDA call failed on a device thread\n");
            return 1;
        }
    } else {
        for (int it = 0; it < ITERATIONS; ++it) {
            for (int d = 0; d < 2; ++d) {
                CHECK(cudaSetDevice(d));
                step<<<GRID, BLOCK>>>(y[d], N, mul_of(d), (unsigned)it);
                unsigned head = 0;
                CHECK(cudaMemcpy(&head, y[d] + 7, sizeof(head), cudaMemcpyDeviceToHost));
                heads[d].push_back(head);
            }
        }
    }
    // Device 1's result onto device 0, updated there once more.
    CHECK(cudaSetDevice(0));
    CHECK(cudaMemcpyPeer(copy_on_0, 0, y[1], 1, N * sizeof(unsigned)));
    step<<<GRID, BLOCK>>>(copy_on_0, N, 7u, 99u);
    CHECK(cudaGetLastError());

    std::vector<unsigned> got(N), expect[2] = {init, init};
    int wrong = 0, wrong_heads = 0;
    for (int d = 0; d < 2; ++d) {
        for (int it = 0; it < ITERATIONS; ++it) {
            expect_step(expect[d], mul_of(d), (unsigned)it);
            if (heads[d].size() != (size_t)ITERATIONS || heads[d][it] != expect[d][7]) ++wrong_heads;
        }
        CHECK(cudaSetDevice(d));
        CHECK(cudaMemcpy(got.data(), y[d], N * sizeof(unsigned), cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; ++i) wrong += got[i] != expect[d][i];
    }
    std::vector<unsigned> copied = expect[1];
    expect_step(copied, 7u, 99u);
    CHECK(cudaSetDevice(0));
    CHECK(cudaMemcpy(got.data(), copy_on_0, N * sizeof(unsigned), cudaMemcpyDeviceToHost));
    int wrong_copy = 0;
    for (int i = 0; i < N; ++i) wrong_copy += got[i] != copied[i];
    bool ok = wrong == 0 && wrong_heads == 0 && wrong_copy == 0;
    printf("RESULT two_devices %s mode=%s mismatches=%d head_mismatches=%d copy_mismatches=%d launches=%d\n",
           ok ? "PASS" : "FAIL", mode, wrong, wrong_heads, wrong_copy, 2 * ITERATIONS + 1);
    return ok ? 0 : 1;
}
