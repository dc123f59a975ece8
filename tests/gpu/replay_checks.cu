// GPU test programs for kreplay's kernel replay, one mode per argv[1]. Each mode runs a small
// workload, checks its results against what ONE execution of every kernel must produce, prints
// "RESULT <mode> PASS|FAIL <details>" and exits 0 (pass) or 1 (fail). Some modes (managed_pool,
// signal) print the observed values instead ("RESULT <mode> VALUES ..."); run.py judges them.
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <sys/resource.h>
#include <thread>
#include <vector>

namespace cg = cooperative_groups;

#define CHECK(call)                                                                       \
    do {                                                                                  \
        cudaError_t err_ = (call);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            printf("RESULT %s FAIL %s failed: %s\n", g_mode, #call, cudaGetErrorString(err_)); \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static const char* g_mode = "?";

__device__ unsigned int d_blocks_seen;
__constant__ float c_scale[4];

// y[i] = y[i] * c_scale[i % 4] + 1, and one count per block in a __device__ variable.
__global__ void scale_inplace(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) atomicAdd(&d_blocks_seen, 1u);
    if (i < n) y[i] = fmaf(y[i], c_scale[i % 4], 1.0f);
}

__global__ void add_one(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += 1.0f;
}

// 2D in-place update of a pitched allocation.
__global__ void pitched_update(float* base, size_t pitch, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        float* row = (float*)((char*)base + y * pitch);
        row[x] = row[x] * 3.0f + (float)y;
    }
}

// Increments one int in each of `count` buffers named by a device-side pointer table.
__global__ void touch_many(int** table, int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) table[i][0] += i + 1;
}

__global__ void add_from(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];
}

__global__ void cluster_inplace(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * 2.0f + 1.0f;
}

// Grid-wide two-phase update: phase 1 doubles, grid sync, phase 2 adds the neighbour's value.
__global__ void cooperative_inplace(float* y, float* tmp, int n) {
    cg::grid_group grid = cg::this_grid();
    for (int i = grid.thread_rank(); i < n; i += grid.size()) tmp[i] = y[i] * 2.0f;
    grid.sync();
    for (int i = grid.thread_rank(); i < n; i += grid.size()) y[i] = tmp[i] + tmp[(i + 1) % n];
}

__global__ void increment_int(int* p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1;
}

// Spins until the host sets *flag, or max_ns pass (so a test can never hang the GPU for long).
__global__ void spin_wait(volatile int* flag, unsigned long long max_ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (*flag == 0 && now - start < max_ns);
}

static int report(bool ok, const char* details) {
    printf("RESULT %s %s %s\n", g_mode, ok ? "PASS" : "FAIL", details);
    return ok ? 0 : 1;
}

static int mode_inplace() {
    const int n = 1 << 20, block = 256, grid = (n + block - 1) / block, launches = 3;
    float scale[4] = {1.5f, 0.5f, 2.0f, 1.0f};
    CHECK(cudaMemcpyToSymbol(c_scale, scale, sizeof(scale)));
    unsigned int zero = 0;
    CHECK(cudaMemcpyToSymbol(d_blocks_seen, &zero, sizeof(zero)));
    std::vector<float> host(n), expect(n);
    for (int i = 0; i < n; ++i) host[i] = expect[i] = (float)(i % 13) * 0.125f;
    float* y;
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMemcpy(y, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    for (int l = 0; l < launches; ++l) scale_inplace<<<grid, block>>>(y, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    unsigned int blocks = 0;
    CHECK(cudaMemcpyFromSymbol(&blocks, d_blocks_seen, sizeof(blocks)));
    for (int l = 0; l < launches; ++l)
        for (int i = 0; i < n; ++i) expect[i] = fmaf(expect[i], scale[i % 4], 1.0f);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += memcmp(&host[i], &expect[i], sizeof(float)) != 0;
    char details[200];
    snprintf(details, sizeof details, "mismatches=%d blocks_counted=%u expected=%d", bad, blocks, grid * launches);
    return report(bad == 0 && blocks == (unsigned)(grid * launches), details);
}

static int mode_footprint() {
    // Pitched 2D buffer plus 300 separate allocations; two dispatches.
    const int width = 1000, height = 513;
    size_t pitch;
    float* img;
    CHECK(cudaMallocPitch(&img, &pitch, width * sizeof(float), height));
    std::vector<float> host(width * height);
    for (int i = 0; i < width * height; ++i) host[i] = (float)(i % 17);
    CHECK(cudaMemcpy2D(img, pitch, host.data(), width * sizeof(float), width * sizeof(float), height, cudaMemcpyHostToDevice));
    const int count = 300;
    std::vector<int*> bufs(count);
    for (int i = 0; i < count; ++i) {
        CHECK(cudaMalloc(&bufs[i], 4096 + 256 * (i % 7)));
        CHECK(cudaMemset(bufs[i], 0, 4));
    }
    int** table;
    CHECK(cudaMalloc(&table, count * sizeof(int*)));
    CHECK(cudaMemcpy(table, bufs.data(), count * sizeof(int*), cudaMemcpyHostToDevice));
    dim3 block(32, 8), grid((width + 31) / 32, (height + 7) / 8);
    pitched_update<<<grid, block>>>(img, pitch, width, height);
    touch_many<<<(count + 127) / 128, 128>>>(table, count);
    CHECK(cudaGetLastError());
    std::vector<float> out(width * height);
    CHECK(cudaMemcpy2D(out.data(), width * sizeof(float), img, pitch, width * sizeof(float), height, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            float e = host[y * width + x] * 3.0f + (float)y;
            bad += out[y * width + x] != e;
        }
    int bad_many = 0;
    for (int i = 0; i < count; ++i) {
        int v;
        CHECK(cudaMemcpy(&v, bufs[i], 4, cudaMemcpyDeviceToHost));
        bad_many += v != i + 1;
    }
    char details[200];
    snprintf(details, sizeof details, "pitched_mismatches=%d many_alloc_mismatches=%d", bad, bad_many);
    return report(bad == 0 && bad_many == 0, details);
}

static int mode_streams() {
    // Two host threads, each with its own stream and buffer, launching concurrently.
    const int n = 1 << 18, launches = 4;
    std::vector<float*> bufs(2);
    for (auto& b : bufs) {
        CHECK(cudaMalloc(&b, n * sizeof(float)));
        CHECK(cudaMemset(b, 0, n * sizeof(float)));
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
        threads.emplace_back([&, t] {
            cudaStream_t s;
            cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
            for (int l = 0; l < launches; ++l) add_one<<<(n + 255) / 256, 256, 0, s>>>(bufs[t], n);
            cudaStreamSynchronize(s);
            cudaStreamDestroy(s);
        });
    for (auto& t : threads) t.join();
    CHECK(cudaDeviceSynchronize());
    int bad = 0;
    std::vector<float> host(n);
    for (int t = 0; t < 2; ++t) {
        CHECK(cudaMemcpy(host.data(), bufs[t], n * sizeof(float), cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; ++i) bad += host[i] != (float)launches;
    }
    char details[100];
    snprintf(details, sizeof details, "mismatches=%d", bad);
    return report(bad == 0, details);
}

static int mode_interleaved() {
    // One thread: kernels with copies (pageable, device to device), a memset on a second
    // stream, an allocation and a free, and a stream sync between them, as frameworks do.
    // Windows measured by one execution stay open across these calls.
    const int n = 1 << 20, rounds = 4;
    float *y, *x, *copy;
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&copy, n * sizeof(float)));
    CHECK(cudaMemset(y, 0, n * sizeof(float)));
    cudaStream_t side;
    CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    std::vector<float> host(n);
    for (int r = 0; r < rounds; ++r) {
        add_one<<<n / 256, 256>>>(y, n);
        CHECK(cudaMemsetAsync(copy, 0, n * sizeof(float), side));
        for (int i = 0; i < n; ++i) host[i] = (float)(r + 1);
        CHECK(cudaMemcpyAsync(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice, 0));
        float* tmp;
        CHECK(cudaMalloc(&tmp, 1 << 20));
        CHECK(cudaFree(tmp));
        add_from<<<n / 256, 256>>>(y, x, n);
        CHECK(cudaStreamSynchronize(side));
        CHECK(cudaMemcpyAsync(copy, y, n * sizeof(float), cudaMemcpyDeviceToDevice, 0));
    }
    CHECK(cudaDeviceSynchronize());
    // y = sum over rounds of (1 + (r + 1)) = rounds + rounds * (rounds + 1) / 2.
    const float expect = (float)(rounds + rounds * (rounds + 1) / 2);
    std::vector<float> out(n);
    CHECK(cudaMemcpy(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(out.data(), copy, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += host[i] != expect || out[i] != expect;
    char details[100];
    snprintf(details, sizeof details, "mismatches=%d expected=%.0f", bad, expect);
    return report(bad == 0, details);
}

static int mode_launch_ex() {
    // cudaLaunchKernelEx with a cluster dimension, then a cooperative launch with grid sync.
    const int n = 1 << 16;
    float *y, *tmp;
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMalloc(&tmp, n * sizeof(float)));
    std::vector<float> host(n), expect(n);
    for (int i = 0; i < n; ++i) host[i] = (float)(i % 5);
    CHECK(cudaMemcpy(y, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(n / 256);
    config.blockDim = dim3(256);
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = 2;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    config.attrs = &attr;
    config.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&config, cluster_inplace, y, n));
    int blocks_per_sm = 0, sms = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, cooperative_inplace, 256, 0));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    int n_arg = n;
    void* args[] = {&y, &tmp, &n_arg};
    CHECK(cudaLaunchCooperativeKernel((void*)cooperative_inplace, dim3(sms), dim3(256), args, 0, 0));
    CHECK(cudaMemcpy(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    std::vector<float> t(n);
    for (int i = 0; i < n; ++i) expect[i] = (float)(i % 5) * 2.0f + 1.0f;
    for (int i = 0; i < n; ++i) t[i] = expect[i] * 2.0f;
    for (int i = 0; i < n; ++i) expect[i] = t[i] + t[(i + 1) % n];
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += host[i] != expect[i];
    char details[100];
    snprintf(details, sizeof details, "mismatches=%d", bad);
    return report(bad == 0, details);
}

static int mode_graph() {
    // Two kernels captured into a graph; the graph is launched twice, then one ordinary launch
    // (it must still be measured: a measured graph launch once left CUPTI in error).
    const int n = 1 << 16;
    float* y;
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMemset(y, 0, n * sizeof(float)));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    add_one<<<n / 256, 256, 0, s>>>(y, n);
    add_one<<<n / 256, 256, 0, s>>>(y, n);
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaGraphLaunch(exec, s));
    add_one<<<n / 256, 256, 0, s>>>(y, n);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(s));
    std::vector<float> host(n);
    CHECK(cudaMemcpy(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += host[i] != 5.0f;
    char details[100];
    snprintf(details, sizeof details, "mismatches=%d (graph ran exactly twice, the kernel once)", bad);
    return report(bad == 0, details);
}

static void CUDART_CB count_call(void* calls) { ++*(int*)calls; }

static int mode_graph_nodes() {
    // A graph built with the graph API: memset y = 0 -> add_one -> child graph {add_one} ->
    // scale_inplace (c_scale = 3) -> copy y to pinned host memory -> host node counting its
    // calls. Its source graph is destroyed right after instantiation; launched 3 times. Each
    // launch leaves y = (0 + 1 + 1) * 3 + 1 = 7, and the host node runs exactly 3 times.
    const int n = 1 << 16, block = 256, launches = 3;
    float scale[4] = {3.0f, 3.0f, 3.0f, 3.0f};
    CHECK(cudaMemcpyToSymbol(c_scale, scale, sizeof(scale)));
    float *y, *host;
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMallocHost(&host, n * sizeof(float)));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int calls = 0;
    int count = n;
    void* args[] = {&y, &count};
    cudaKernelNodeParams k = {};
    k.gridDim = dim3(n / block);
    k.blockDim = dim3(block);
    k.kernelParams = args;

    cudaGraph_t graph, child;
    CHECK(cudaGraphCreate(&graph, 0));
    CHECK(cudaGraphCreate(&child, 0));
    cudaGraphNode_t memset_node, first, child_node, scaled, copied, counted, in_child;
    cudaMemsetParams m = {};
    m.dst = y;
    m.value = 0;
    m.elementSize = 4;
    m.width = n;
    m.height = 1;
    CHECK(cudaGraphAddMemsetNode(&memset_node, graph, nullptr, 0, &m));
    k.func = (void*)add_one;
    CHECK(cudaGraphAddKernelNode(&first, graph, &memset_node, 1, &k));
    CHECK(cudaGraphAddKernelNode(&in_child, child, nullptr, 0, &k));
    CHECK(cudaGraphAddChildGraphNode(&child_node, graph, &first, 1, child));
    k.func = (void*)scale_inplace;
    CHECK(cudaGraphAddKernelNode(&scaled, graph, &child_node, 1, &k));
    CHECK(cudaGraphAddMemcpyNode1D(&copied, graph, &scaled, 1, host, y, n * sizeof(float), cudaMemcpyDeviceToHost));
    cudaHostNodeParams h = {count_call, &calls};
    CHECK(cudaGraphAddHostNode(&counted, graph, &copied, 1, &h));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaGraphDestroy(child));
    int bad = 0;
    for (int launch = 0; launch < launches; ++launch) {
        for (int i = 0; i < n; ++i) host[i] = -1.0f;
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaStreamSynchronize(s));
        for (int i = 0; i < n; ++i) bad += host[i] != 7.0f;
    }
    char details[120];
    snprintf(details, sizeof details, "mismatches=%d host_calls=%d (expected %d)", bad, calls, launches);
    return report(bad == 0 && calls == launches, details);
}

static int mode_managed_pool() {
    // One increment of managed memory and one of stream-ordered pool memory. kreplay does not
    // restore either: with P passes each ends at P. Prints the values for run.sh to judge.
    const int n = 1024;
    int *managed, *pooled;
    CHECK(cudaMallocManaged(&managed, n * sizeof(int)));
    memset(managed, 0, n * sizeof(int));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMallocAsync(&pooled, n * sizeof(int), s));
    CHECK(cudaMemsetAsync(pooled, 0, n * sizeof(int), s));
    CHECK(cudaStreamSynchronize(s));
    increment_int<<<n / 256, 256>>>(managed, n);
    increment_int<<<n / 256, 256, 0, s>>>(pooled, n);
    CHECK(cudaDeviceSynchronize());
    int pooled0 = 0;
    CHECK(cudaMemcpy(&pooled0, pooled, sizeof(int), cudaMemcpyDeviceToHost));
    printf("RESULT managed_pool VALUES managed=%d pool=%d\n", managed[0], pooled0);
    CHECK(cudaFreeAsync(pooled, s));
    CHECK(cudaStreamSynchronize(s));
    return 0;
}

static int mode_bad_launch() {
    // A launch the driver refuses (4096 threads per block), then a valid in-place one.
    const int n = 1 << 16;
    float* y;
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMemset(y, 0, n * sizeof(float)));
    add_one<<<1, 4096>>>(y, n);
    cudaError_t refused = cudaGetLastError();
    add_one<<<n / 256, 256>>>(y, n);
    CHECK(cudaGetLastError());
    std::vector<float> host(n);
    CHECK(cudaMemcpy(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += host[i] != 1.0f;
    char details[160];
    snprintf(details, sizeof details, "refused=%s mismatches=%d", cudaGetErrorName(refused), bad);
    return report(refused != cudaSuccess && bad == 0, details);
}

static int mode_stuck() {
    // A kernel that waits for the host keeps one stream busy; a replayed launch on another
    // stream must hit the drain deadline (run.sh sets it to 2 s) and abort the process.
    int* flag;
    CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
    *flag = 0;
    int* dflag;
    CHECK(cudaHostGetDevicePointer(&dflag, flag, 0));
    float* y;
    CHECK(cudaMalloc(&y, 1024 * sizeof(float)));
    cudaStream_t busy, other;
    CHECK(cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
    spin_wait<<<1, 1, 0, busy>>>(dflag, 8000000000ull);
    add_one<<<4, 256, 0, other>>>(y, 1024);
    *flag = 1;
    CHECK(cudaDeviceSynchronize());
    return report(false, "not aborted: the replayed launch did not wait for the busy stream");
}

// Five in-place kernels, a sync, then the process ends by a signal (6: abort(), 15: SIGTERM)
// with the replay window still open: every pass of every dispatch must be in the output.
static int mode_signal(int signal_number) {
    const int n = 1 << 20, block = 256, grid = (n + block - 1) / block;
    float scale[4] = {1.5f, 0.5f, 2.0f, 1.0f};
    CHECK(cudaMemcpyToSymbol(c_scale, scale, sizeof(scale)));
    float* y;
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMemset(y, 0, n * sizeof(float)));
    for (int l = 0; l < 5; ++l) scale_inplace<<<grid, block>>>(y, n);
    CHECK(cudaDeviceSynchronize());
    printf("RESULT signal VALUES ending by signal %d\n", signal_number);
    fflush(stdout);
    if (signal_number == 6) abort();
    raise(signal_number);
    return report(false, "the signal did not end the process");
}

// 200 in-place kernels, each run once (one counter group), then a write through a null pointer:
// the crashing thread waits for kreplay's database writer, so every dispatch is recorded.
static int mode_segv() {
    const int n = 1 << 16, block = 256, grid = (n + block - 1) / block;
    float scale[4] = {1.5f, 0.5f, 2.0f, 1.0f};
    CHECK(cudaMemcpyToSymbol(c_scale, scale, sizeof(scale)));
    float* y;
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMemset(y, 0, n * sizeof(float)));
    for (int l = 0; l < 200; ++l) scale_inplace<<<grid, block>>>(y, n);
    CHECK(cudaDeviceSynchronize());
    printf("RESULT segv VALUES crashing after 200 dispatches\n");
    fflush(stdout);
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);  // no core file from the check
    *(volatile int*)nullptr = 1;
    return report(false, "the fault did not end the process");
}

// Device printf: one line per block of the first kernel; under replay the output must be the
// same (the kernel runs once). The second kernel prints nothing and is replayed.
__global__ void say_hello(int tag) {
    if (threadIdx.x == 0) printf("hello from block %d tag %d\n", blockIdx.x, tag);
}

static int mode_printf() {
    say_hello<<<4, 32>>>(7);
    CHECK(cudaDeviceSynchronize());
    float* y;
    CHECK(cudaMalloc(&y, 1024 * sizeof(float)));
    CHECK(cudaMemset(y, 0, 1024 * sizeof(float)));
    add_one<<<4, 256>>>(y, 1024);
    float host[1024];
    CHECK(cudaMemcpy(host, y, sizeof(host), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < 1024; ++i) bad += host[i] != 1.0f;
    char details[100];
    snprintf(details, sizeof details, "mismatches=%d", bad);
    return report(bad == 0, details);
}

// Device-side new/delete: each thread allocates, writes, frees; the kernel runs once.
__global__ void heap_user(int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int* p = new int[4];
    for (int k = 0; k < 4; ++k) p[k] = i + k;
    out[i] = p[0] + p[3];
    delete[] p;
}

static int mode_heap() {
    const int n = 4096;
    int* out;
    CHECK(cudaMalloc(&out, n * sizeof(int)));
    heap_user<<<n / 256, 256>>>(out, n);
    CHECK(cudaGetLastError());
    std::vector<int> host(n);
    CHECK(cudaMemcpy(host.data(), out, n * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += host[i] != 2 * i + 3;
    char details[100];
    snprintf(details, sizeof details, "mismatches=%d", bad);
    return report(bad == 0, details);
}

// Ordinary malloc'd host memory, which a GPU with pageable memory access (HMM, ATS) reads and
// writes directly: no snapshot covers it, so a replay would add the atomics again.
__global__ void pageable_add(int* counter) { atomicAdd_system(counter, 1); }

static int mode_pageable() {
    int device = 0, pageable = 0;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, device));
    if (!pageable) {
        printf("RESULT pageable SKIP pageable_memory_access=0\n");
        return 0;
    }
    int* counter = static_cast<int*>(malloc(sizeof(int)));
    *counter = 0;
    pageable_add<<<64, 256>>>(counter);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    char details[100];
    snprintf(details, sizeof details, "counter=%d expected=%d", *counter, 64 * 256);
    bool ok = *counter == 64 * 256;
    free(counter);
    return report(ok, details);
}

static int mode_module_reload(const char* cubin) {
    // A library with a __device__ variable, loaded, launched twice and unloaded, three times:
    // the replay of a later round must not copy the variable of an unloaded round (its memory
    // is gone: a batched snapshot copy faulted inside the driver on it).
    const int n = 1 << 16, block = 256, grid = n / block, launches = 2, rounds = 3;
    float* y;
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMemset(y, 0, n * sizeof(float)));
    int bad_counts = 0;
    for (int r = 0; r < rounds; ++r) {
        cudaLibrary_t lib;
        CHECK(cudaLibraryLoadFromFile(&lib, cubin, nullptr, nullptr, 0, nullptr, nullptr, 0));
        cudaKernel_t kernel;
        CHECK(cudaLibraryGetKernel(&kernel, lib, "reload_add"));
        void* count_ptr;
        size_t count_bytes;
        CHECK(cudaLibraryGetGlobal(&count_ptr, &count_bytes, lib, "r_count"));
        CHECK(cudaMemset(count_ptr, 0, count_bytes));
        int len = n;
        for (int l = 0; l < launches; ++l) {
            void* args[] = {&y, &len};
            CHECK(cudaLaunchKernel((const void*)kernel, dim3(grid), dim3(block), args, 0, 0));
        }
        unsigned int count = 0;
        CHECK(cudaMemcpy(&count, count_ptr, sizeof(count), cudaMemcpyDeviceToHost));
        bad_counts += count != (unsigned)launches;
        CHECK(cudaLibraryUnload(lib));
    }
    std::vector<float> host(n);
    CHECK(cudaMemcpy(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += host[i] != (float)(launches * rounds);
    char details[100];
    snprintf(details, sizeof details, "mismatches=%d bad_counts=%d", bad, bad_counts);
    return report(bad == 0 && bad_counts == 0, details);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s inplace|footprint|streams|module_reload CUBIN|launch_ex|graph|graph_nodes|managed_pool|stuck|bad_launch\n", argv[0]);
        return 2;
    }
    // Line-buffered even into a pipe: a RESULT line is out before anything that could end the
    // process later (an exit-time crash would otherwise take it with the buffer).
    setvbuf(stdout, nullptr, _IOLBF, 0);
    g_mode = argv[1];
    if (!strcmp(g_mode, "inplace")) return mode_inplace();
    if (!strcmp(g_mode, "footprint")) return mode_footprint();
    if (!strcmp(g_mode, "streams")) return mode_streams();
    if (!strcmp(g_mode, "module_reload") && argc > 2) return mode_module_reload(argv[2]);
    if (!strcmp(g_mode, "launch_ex")) return mode_launch_ex();
    if (!strcmp(g_mode, "interleaved")) return mode_interleaved();
    if (!strcmp(g_mode, "graph")) return mode_graph();
    if (!strcmp(g_mode, "graph_nodes")) return mode_graph_nodes();
    if (!strcmp(g_mode, "managed_pool")) return mode_managed_pool();
    if (!strcmp(g_mode, "stuck")) return mode_stuck();
    if (!strcmp(g_mode, "bad_launch")) return mode_bad_launch();
    if (!strcmp(g_mode, "abort")) return mode_signal(6);
    if (!strcmp(g_mode, "sigterm")) return mode_signal(15);
    if (!strcmp(g_mode, "segv")) return mode_segv();
    if (!strcmp(g_mode, "printf")) return mode_printf();
    if (!strcmp(g_mode, "heap")) return mode_heap();
    if (!strcmp(g_mode, "pageable")) return mode_pageable();
    fprintf(stderr, "unknown mode %s\n", g_mode);
    return 2;
}
