// How much device memory the L2 flusher's own context and buffer take (docs/kernel-replay.md).
#include <cuda.h>
#include <cstdio>
int main() {
  cuInit(0); CUdevice dev; cuDeviceGet(&dev, 0);
  CUcontext primary; cuDevicePrimaryCtxRetain(&primary, dev); cuCtxSetCurrent(primary);
  size_t f0, t; cuMemGetInfo(&f0, &t);
  CUcontext ctx; CUctxCreateParams p = {}; cuCtxCreate(&ctx, &p, 0, dev);
  size_t f1; cuMemGetInfo(&f1, &t);
  int l2; cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
  CUdeviceptr b; cuMemAlloc(&b, (size_t)l2 * 5 / 4);
  size_t f2; cuMemGetInfo(&f2, &t);
  printf("context %.1f MiB, context + buffer %.1f MiB\n", (f0 - f1) / 1048576.0, (f0 - f2) / 1048576.0);
  return 0;
}
