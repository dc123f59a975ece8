// Probe: what does identifying GPU 0 for counter checks cost (kreplay's CLI does this before
// starting the application)? Times cuInit, cuptiDeviceGetChipName, context creation and the
// counter-availability image, each step after the previous one.
// Build: nvcc -O2 init_cost.cu -lcuda -lcupti -o init_cost
#include <cuda.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <chrono>
#include <cstdio>
#include <vector>

static double ms(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
}

int main() {
  auto t0 = std::chrono::steady_clock::now();
  CUresult r = cuInit(0);
  printf("cuInit %d: %.1f ms\n", (int)r, ms(t0));
  auto t1 = std::chrono::steady_clock::now();
  CUpti_Profiler_Initialize_Params pi = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CUptiResult c = cuptiProfilerInitialize(&pi);
  printf("cuptiProfilerInitialize %d: %.1f ms\n", (int)c, ms(t1));
  auto t2 = std::chrono::steady_clock::now();
  CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  cn.deviceIndex = 0;
  c = cuptiDeviceGetChipName(&cn);
  printf("cuptiDeviceGetChipName %d (%s): %.1f ms\n", (int)c, c == CUPTI_SUCCESS ? cn.pChipName : "-", ms(t2));
  auto t3 = std::chrono::steady_clock::now();
  CUdevice dev;
  cuDeviceGet(&dev, 0);
  CUcontext ctx;
  r = cuDevicePrimaryCtxRetain(&ctx, dev);
  cuCtxSetCurrent(ctx);
  printf("primary context %d: %.1f ms\n", (int)r, ms(t3));
  auto t4 = std::chrono::steady_clock::now();
  CUpti_Profiler_GetCounterAvailability_Params av = {CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  av.ctx = ctx;
  c = cuptiProfilerGetCounterAvailability(&av);
  std::vector<uint8_t> image(av.counterAvailabilityImageSize);
  av.pCounterAvailabilityImage = image.data();
  c = cuptiProfilerGetCounterAvailability(&av);
  printf("counter availability %d (%zu B): %.1f ms\n", (int)c, image.size(), ms(t4));
  auto t5 = std::chrono::steady_clock::now();
  cuDevicePrimaryCtxRelease(dev);
  printf("context release: %.1f ms; total %.1f ms\n", ms(t5), ms(t0));
  return 0;
}
