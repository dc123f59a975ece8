// A kernel with a __device__ variable in a module of its own, built as a cubin for
// replay_checks' module_reload mode (which loads, runs and unloads it several times).
__device__ unsigned int r_count;

extern "C" __global__ void reload_add(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) atomicAdd(&r_count, 1u);
    if (i < n) y[i] += 1.0f;
}
