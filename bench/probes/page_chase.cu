// Probe (issue 18): does a flush that sweeps 75 MiB through the SMs leave the next kernel's
// address translations cold? One thread follows a chain of dependent loads, one per 2 MiB page
// of a 64 MiB buffer (PAGES pages), after a kernel that touched those same pages (as the
// application's previous kernel would have). Launch order, repeated ROUNDS times:
//   touch, chase(1 page), touch, chase(PAGES), touch, sweep(75 MiB), chase(PAGES),
//   touch, sweep_by_sm(75 MiB), chase(PAGES)
// The chases after a sweep of the program's own, the traffic of kreplay's flush, show under ncu
// (which flushes otherwise) what a sweep costs the next kernel: `sweep` strides over the whole
// buffer from every block, as kreplay's flush does, so every SM reads most of its pages;
// `sweep_by_sm` gives the blocks that share an SM (by %smid, a slot each by an atomic count)
// one contiguous part of it, so each SM reads one or two pages.
// Usage: page_chase ROUNDS PAGES. Prints the chain's end (the same in every run).
#include <cstdio>
#include <cstdlib>

const size_t PAGE = 2u << 20;

__global__ void touch(unsigned *a, int pages) {
    int p = threadIdx.x;
    if (p < pages) a[p * (PAGE / 4) + 1] += 1;  // one word per page, not on the chain
}

__global__ void chase(const unsigned *a, int hops, unsigned *out) {
    unsigned i = 0;
    for (int k = 0; k < hops; ++k) i = a[i];
    *out = i;
}

__global__ void sweep(const unsigned *b, size_t words, unsigned *out) {
    unsigned s = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words; i += (size_t)gridDim.x * blockDim.x * 8)
        s += b[i];
    if (s == 0xdeadbeef) *out = s;
}

const int SMS = 132, BLOCKS_PER_SM = 4;

__global__ void sweep_by_sm(const unsigned *b, size_t words, unsigned *out, unsigned *slots) {
    __shared__ unsigned slot;
    unsigned sm;
    asm("mov.u32 %0, %%smid;" : "=r"(sm));
    sm %= SMS;
    if (threadIdx.x == 0) slot = atomicAdd(&slots[sm], 1) % BLOCKS_PER_SM;
    __syncthreads();
    size_t chunk = words / (SMS * BLOCKS_PER_SM);
    size_t first = (sm * BLOCKS_PER_SM + slot) * chunk;
    unsigned s = 0;
    for (size_t i = threadIdx.x * 8; i < chunk; i += blockDim.x * 8) s += b[first + i];
    if (s == 0xdeadbeef) *out = s;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    int pages = argc > 2 ? atoi(argv[2]) : 32;
    unsigned *a, *b, *out, *slots;
    const size_t sweep_bytes = 75u << 20;
    cudaMalloc(&a, pages * PAGE);
    cudaMalloc(&b, sweep_bytes);
    cudaMalloc(&out, sizeof(unsigned));
    cudaMalloc(&slots, SMS * sizeof(unsigned));
    cudaMemset(slots, 0, SMS * sizeof(unsigned));
    cudaMemset(b, 0, sweep_bytes);
    // The chain: word 0 of page p (at a 4 KiB step within its page) points to page p+1's.
    unsigned *h = (unsigned *)calloc(pages * PAGE / 4, 4);
    for (int p = 0; p < pages; ++p) {
        size_t at = p * (PAGE / 4) + (size_t)(p % 16) * 1024;
        size_t next = ((p + 1) % pages) * (PAGE / 4) + (size_t)((p + 1) % 16) * 1024;
        h[at] = (unsigned)next;
    }
    cudaMemcpy(a, h, pages * PAGE, cudaMemcpyHostToDevice);
    for (int r = 0; r < rounds; ++r) {
        touch<<<1, 64>>>(a, pages);
        chase<<<1, 1>>>(a, 1, out);
        touch<<<1, 64>>>(a, pages);
        chase<<<1, 1>>>(a, pages, out);
        touch<<<1, 64>>>(a, pages);
        sweep<<<SMS * BLOCKS_PER_SM, 512>>>(b, sweep_bytes / 4, out);
        chase<<<1, 1>>>(a, pages, out);
        touch<<<1, 64>>>(a, pages);
        sweep_by_sm<<<SMS * BLOCKS_PER_SM, 512>>>(b, sweep_bytes / 4, out, slots);
        chase<<<1, 1>>>(a, pages, out);
    }
    unsigned end = 0;
    cudaMemcpy(&end, out, sizeof end, cudaMemcpyDeviceToHost);
    printf("chain end %u\n", end);
    return cudaDeviceSynchronize() != cudaSuccess;
}
