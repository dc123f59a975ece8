// Probe: CUPTI's range profiler with user ranges (CUPTI_UserRange, push/pop) instead of automatic
// ranges, in one Start/Stop per pass, as a way to run kreplay's L2 flush in the application's own
// context without the flush's kernels being ranges of their own. Questions for the GPU:
//   1. Does a user range count only the kernel between its push and pop (sm__ctas_launched equal
//      to the victim's grid), with the flush's kernels outside every range, on the legacy stream
//      and on a non-blocking stream?
//   2. After that flush, do the victim's L2 membar sectors and DRAM reads equal what an
//      automatic range after the same flush gives (the flush in the same context either way)?
//   3. What does a window of K kernels cost per kernel with user ranges against automatic ones?
//   4. Issue 19: an in-place update after a 256 MiB copy, no flush: DRAM bytes written with
//      automatic ranges in one Start, with user ranges in one Start, and with a Start/Stop per
//      kernel (Nsight Compute's way).
// Measured on the H200 (2026-12-02, twenty-first session): user ranges need a name of their own
// each, and the profiler disabled and enabled again between range modes; they count only the
// victim (the flush's CTAs outside them) but add 470-900 L2 membar sectors per range, and their
// gpu__time_duration spans push to pop (about 16,000 ns for a 2,052 ns kernel), so time-based
// metrics cannot come from them; on question 4 they give 1.295e7 B where a Start/Stop per kernel
// gives 1.198-1.206e7, Nsight Compute's value (at about 28 ms per Start/Stop). Automatic ranges
// cost about 1-1.4 ms each. kreplay keeps automatic ranges (docs/kernel-replay.md).
// Build: nvcc -O2 -arch=sm_90 user_ranges.cu -lcuda -lcupti -o user_ranges
// Run:   user_ranges   (one line per window; "FINDING" lines last)
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#define CK(call)                                                                            \
  do {                                                                                      \
    CUptiResult r_ = (call);                                                                \
    if (r_ != CUPTI_SUCCESS) {                                                              \
      const char* s_ = nullptr;                                                             \
      cuptiGetResultString(r_, &s_);                                                        \
      printf("%s:%d %s failed: %d %s\n", __FILE__, __LINE__, #call, (int)r_, s_ ? s_ : ""); \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

static double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static const std::vector<std::string> METRICS = {
    "sm__ctas_launched.sum", "lts__t_sectors_op_membar.sum", "lts__t_sectors.sum",
    "dram__bytes_read.sum",  "dram__bytes_write.sum",        "gpu__time_duration.sum"};
static const size_t MAX_RANGES = 128;

// The flush as kreplay's PTX does it: three read sweeps of 1.25 x L2, then a discard of every line.
__global__ void touch(const unsigned* p, size_t bytes, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * 32; i < bytes; i += (size_t)gridDim.x * blockDim.x * 32)
    acc += p[i / 4];
  if (acc == 0x12345678) *sink = acc;
}
__global__ void discard(char* p, size_t bytes) {
  for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * 128; i < bytes; i += (size_t)gridDim.x * blockDim.x * 128)
    asm volatile("discard.global.L2 [%0], 128;" ::"l"(p + i) : "memory");
}
__global__ void update(float* y, size_t n, float a) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    y[i] = y[i] * a + 1.0f;
}
__global__ void copy(float4* d, const float4* s, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) d[i] = s[i];
}

struct Rp {
  CUcontext ctx;
  CUpti_RangeProfiler_Object* obj = nullptr;
  CUpti_Profiler_Host_Object* host = nullptr;
  std::vector<uint8_t> config, data;
  std::vector<const char*> names;
  size_t passes = 0;

  void build(const char* chip, const uint8_t* avail) {
    CUpti_Profiler_Host_Initialize_Params init = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    init.pChipName = chip;
    init.pCounterAvailabilityImage = avail;
    CK(cuptiProfilerHostInitialize(&init));
    host = init.pHostObject;
    for (auto& m : METRICS) names.push_back(m.c_str());
    CUpti_Profiler_Host_ConfigAddMetrics_Params add = {CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    add.pHostObject = host;
    add.ppMetricNames = names.data();
    add.numMetrics = names.size();
    CK(cuptiProfilerHostConfigAddMetrics(&add));
    CUpti_Profiler_Host_GetConfigImageSize_Params size = {CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    size.pHostObject = host;
    CK(cuptiProfilerHostGetConfigImageSize(&size));
    config.resize(size.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params get = {CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    get.pHostObject = host;
    get.configImageSize = config.size();
    get.pConfigImage = config.data();
    CK(cuptiProfilerHostGetConfigImage(&get));
    CUpti_Profiler_Host_GetNumOfPasses_Params np = {CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    np.configImageSize = config.size();
    np.pConfigImage = config.data();
    CK(cuptiProfilerHostGetNumOfPasses(&np));
    passes = np.numOfPasses;
    printf("image: %zu passes\n", passes);
  }
  void enable() {
    CUpti_RangeProfiler_Enable_Params p = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    p.ctx = ctx;
    CK(cuptiRangeProfilerEnable(&p));
    obj = p.pRangeProfilerObject;
    CUpti_RangeProfiler_GetCounterDataSize_Params s = {CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    s.pRangeProfilerObject = obj;
    s.pMetricNames = names.data();
    s.numMetrics = names.size();
    s.maxNumOfRanges = MAX_RANGES;
    s.maxNumRangeTreeNodes = MAX_RANGES;
    CK(cuptiRangeProfilerGetCounterDataSize(&s));
    data.assign(s.counterDataSize, 0);
  }
  void disable() {
    CUpti_RangeProfiler_Disable_Params p = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = obj;
    CK(cuptiRangeProfilerDisable(&p));
    obj = nullptr;
  }
  void begin(CUpti_ProfilerRange range) {
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params i = {
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    i.pRangeProfilerObject = obj;
    i.counterDataSize = data.size();
    i.pCounterData = data.data();
    CK(cuptiRangeProfilerCounterDataImageInitialize(&i));
    CUpti_RangeProfiler_SetConfig_Params s = {CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    s.pRangeProfilerObject = obj;
    s.configSize = config.size();
    s.pConfig = config.data();
    s.counterDataImageSize = data.size();
    s.pCounterDataImage = data.data();
    s.range = range;
    s.replayMode = CUPTI_UserReplay;
    s.maxRangesPerPass = MAX_RANGES;
    s.numNestingLevels = 1;
    s.minNestingLevel = 1;
    s.passIndex = 0;
    s.targetNestingLevel = 1;
    CK(cuptiRangeProfilerSetConfig(&s));
  }
  void start() {
    CUpti_RangeProfiler_Start_Params s = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    s.pRangeProfilerObject = obj;
    CK(cuptiRangeProfilerStart(&s));
  }
  bool stop() {
    CUpti_RangeProfiler_Stop_Params s = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    s.pRangeProfilerObject = obj;
    CK(cuptiRangeProfilerStop(&s));
    return s.isAllPassSubmitted != 0;
  }
  // Non-fatal: the result is counted, for the automatic-range windows that try push/pop.
  int failed_pushes = 0;
  void push(const char* name) {
    CUpti_RangeProfiler_PushRange_Params p = {CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = obj;
    p.pRangeName = name;
    if (cuptiRangeProfilerPushRange(&p) != CUPTI_SUCCESS) failed_pushes++;
  }
  void pop() {
    CUpti_RangeProfiler_PopRange_Params p = {CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = obj;
    if (cuptiRangeProfilerPopRange(&p) != CUPTI_SUCCESS) failed_pushes++;
  }
  std::vector<std::vector<double>> decode() {
    CUpti_RangeProfiler_DecodeData_Params d = {CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    d.pRangeProfilerObject = obj;
    CK(cuptiRangeProfilerDecodeData(&d));
    if (d.numOfRangeDropped) printf("  %zu ranges dropped\n", d.numOfRangeDropped);
    CUpti_RangeProfiler_GetCounterDataInfo_Params i = {CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    i.pCounterDataImage = data.data();
    i.counterDataImageSize = data.size();
    CK(cuptiRangeProfilerGetCounterDataInfo(&i));
    std::vector<std::vector<double>> out;
    for (size_t r = 0; r < i.numTotalRanges; r++) {
      std::vector<double> v(names.size(), NAN);
      CUpti_Profiler_Host_EvaluateToGpuValues_Params e = {CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
      e.pHostObject = host;
      e.pCounterDataImage = data.data();
      e.counterDataImageSize = data.size();
      e.rangeIndex = r;
      e.ppMetricNames = names.data();
      e.numMetrics = names.size();
      e.pMetricValues = v.data();
      if (cuptiProfilerHostEvaluateToGpuValues(&e) != CUPTI_SUCCESS) printf("  evaluate range %zu failed\n", r);
      out.push_back(v);
    }
    return out;
  }
};

static Rp* rp;
static unsigned* flush_buf;
static size_t flush_bytes;
static unsigned flush_blocks;
static float *small_y, *big_y, *copy_a, *copy_b;
static const size_t SMALL = 1 << 16, BIG = 4 << 20, COPY = 16 << 20;  // floats, floats, float4s

static void flush(cudaStream_t s) {
  for (int i = 0; i < 3; i++) touch<<<flush_blocks, 512, 0, s>>>(flush_buf, flush_bytes, flush_buf);
  discard<<<flush_blocks, 512, 0, s>>>((char*)flush_buf, flush_bytes);
}

// One window of K kernels with ranges `range` (user ranges pushed around each victim), every pass.
// `step(k, s, user)` enqueues the k-th item; returns per-range values and prints a summary.
static std::vector<std::vector<double>> window(const char* label, CUpti_ProfilerRange range, size_t K,
                                               cudaStream_t s,
                                               const std::function<void(size_t, cudaStream_t, bool)>& step) {
  double t0 = now_ms();
  rp->begin(range);
  bool all = false;
  size_t pass = 0;
  while (!all && pass < 8) {
    rp->start();
    for (size_t k = 0; k < K; k++) step(k, s, range == CUPTI_UserRange);
    cudaDeviceSynchronize();
    all = rp->stop();
    pass++;
  }
  auto v = rp->decode();
  double ms = now_ms() - t0;
  printf("%-44s K=%3zu: %zu passes, %3zu ranges, %8.1f ms = %6.2f ms per kernel;", label, K, pass, v.size(), ms, ms / K);
  // Mean over ranges 1.. (range 0 follows the Start) and range 0 alone.
  for (size_t m = 0; m < METRICS.size(); m++) {
    double sum = 0;
    size_t n = 0;
    for (size_t r = 1; r < v.size(); r++) sum += v[r][m], n++;
    printf(" %s %.4g/%.4g", METRICS[m].substr(0, METRICS[m].find('.')).c_str(), v.empty() ? NAN : v[0][m],
           n ? sum / n : NAN);
  }
  printf("\n");
  return v;
}

static double mean(const std::vector<std::vector<double>>& v, size_t m, size_t from, size_t step) {
  double sum = 0;
  size_t n = 0;
  for (size_t r = from; r < v.size(); r += step) sum += v[r][m], n++;
  return n ? sum / n : NAN;
}

int main() {
  cudaFree(0);
  CUcontext ctx;
  cuCtxGetCurrent(&ctx);
  CUpti_Profiler_Initialize_Params pi = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CK(cuptiProfilerInitialize(&pi));
  CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  CK(cuptiDeviceGetChipName(&cn));
  CUpti_Profiler_GetCounterAvailability_Params av = {CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  av.ctx = ctx;
  CK(cuptiProfilerGetCounterAvailability(&av));
  std::vector<uint8_t> avail(av.counterAvailabilityImageSize);
  av.pCounterAvailabilityImage = avail.data();
  CK(cuptiProfilerGetCounterAvailability(&av));

  int l2 = 0, sms = 0;
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  flush_bytes = ((size_t)l2 * 5 / 4 + 127) / 128 * 128;
  flush_blocks = sms * 8;
  cudaMalloc(&flush_buf, flush_bytes);
  cudaMemset(flush_buf, 0, flush_bytes);
  cudaMalloc(&small_y, SMALL * 4);
  cudaMalloc(&big_y, BIG * 4);
  cudaMalloc(&copy_a, COPY * 16);
  cudaMalloc(&copy_b, COPY * 16);
  cudaMemset(small_y, 0, SMALL * 4);
  cudaMemset(big_y, 0, BIG * 4);
  cudaMemset(copy_a, 0, COPY * 16);
  cudaStream_t side;
  cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  cudaDeviceSynchronize();
  const unsigned small_grid = SMALL / 256, big_grid = 1024;
  printf("L2 %d bytes, %d SMs, flush buffer %zu bytes, %u blocks; small victim grid %u\n", l2, sms, flush_bytes,
         flush_blocks, small_grid);

  Rp r{ctx};
  rp = &r;
  r.build(cn.pChipName, avail.data());
  r.enable();
  // User ranges of the same name are one range (measured): every range its own name.
  std::vector<std::string> range_names;
  for (size_t i = 0; i < MAX_RANGES; i++) range_names.push_back("k" + std::to_string(i));
  auto names = [&](size_t k) { return range_names[k % MAX_RANGES].c_str(); };
  auto victim = [&](size_t k, cudaStream_t s, bool user) {
    flush(s);
    if (user) r.push(names(k));
    update<<<small_grid, 256, 0, s>>>(small_y, SMALL, 1.0001f);
    if (user) r.pop();
  };
  const size_t CTAS = 0, MEMBAR = 1, SECTORS = 2, READ = 3, WRITE = 4;
  auto plain = [&](size_t k, cudaStream_t s, bool user) {
    if (user) r.push(names(k));
    update<<<small_grid, 256, 0, s>>>(small_y, SMALL, 1.0001f);
    if (user) r.pop();
  };
  // Issue 19. Item 2j: the copy; 2j+1: the in-place update of 16 MiB.
  auto pair = [&](size_t k, cudaStream_t s, bool user) {
    if (user) r.push(names(k));
    if (k % 2 == 0)
      copy<<<big_grid, 256, 0, s>>>((float4*)copy_b, (const float4*)copy_a, COPY);
    else
      update<<<big_grid, 256, 0, s>>>(big_y, BIG, 1.0001f);
    if (user) r.pop();
  };
  // An object keeps the range mode of its first configuration (push fails otherwise): the
  // automatic-range windows first, then a fresh object for the user-range ones. Each starts
  // with a warm-up window (the first after Enable pays the configuration).
  window("auto warm-up", CUPTI_AutoRange, 2, 0, victim);
  auto a = window("auto ranges, flush + victim, legacy stream", CUPTI_AutoRange, 24, 0, victim);
  for (size_t K : {16, 64, 128}) window("auto ranges, victims only", CUPTI_AutoRange, K, 0, plain);
  window("auto ranges, flush + victim (5 ranges each)", CUPTI_AutoRange, 25, 0, victim);
  auto pa = window("auto ranges, copy + in-place", CUPTI_AutoRange, 12, 0, pair);
  // Automatic ranges with push/pop around the victim only: are the flush's kernels then outside?
  auto victim_pushed = [&](size_t k, cudaStream_t s, bool) {
    flush(s);
    r.push(names(k));
    update<<<small_grid, 256, 0, s>>>(small_y, SMALL, 1.0001f);
    r.pop();
  };
  auto ap = window("auto ranges + push/pop, flush + victim", CUPTI_AutoRange, 24, 0, victim_pushed);
  printf("FINDING 0: automatic ranges with push/pop: %d failed push/pop calls, %zu ranges for 24 victims, CTAs %.0f/%.0f, "
         "membar %.0f, time %.0f\n",
         r.failed_pushes, ap.size(), ap.empty() ? NAN : ap[0][CTAS], mean(ap, CTAS, 1, 1), mean(ap, MEMBAR, 1, 1),
         mean(ap, 5, 1, 1));
  std::vector<double> each;  // Start/Stop per kernel: windows of one
  for (size_t k = 0; k < 12; k++) {
    auto v = window("auto ranges, Start/Stop per kernel", CUPTI_AutoRange, 1, 0,
                    [&](size_t, cudaStream_t s, bool u) { pair(k, s, u); });
    if (k % 2 && !v.empty()) each.push_back(v[0][WRITE]);
  }
  r.disable();
  r.enable();
  window("user warm-up", CUPTI_UserRange, 2, 0, victim);
  auto u = window("user ranges, flush + victim, legacy stream", CUPTI_UserRange, 24, 0, victim);
  auto us = window("user ranges, flush + victim, side stream", CUPTI_UserRange, 24, side, victim);
  for (size_t K : {16, 64, 128}) window("user ranges, victims only", CUPTI_UserRange, K, 0, plain);
  window("user ranges, flush + victim", CUPTI_UserRange, 120, 0, victim);
  auto pu = window("user ranges, copy + in-place", CUPTI_UserRange, 12, 0, pair);
  // In `a` every 5th range (from 4) is the victim.
  printf("FINDING 1: victim CTAs %u; auto victim ranges %.0f; user ranges %.0f (legacy) %.0f (side); ranges %zu/%zu/%zu "
         "for 24 victims\n",
         small_grid, mean(a, CTAS, 4, 5), mean(u, CTAS, 0, 1), mean(us, CTAS, 0, 1), a.size(), u.size(), us.size());
  printf("FINDING 2: victim membar sectors auto %.0f user %.0f/%.0f; L2 sectors auto %.0f user %.0f/%.0f; DRAM read "
         "auto %.0f user %.0f/%.0f (victim %zu bytes)\n",
         mean(a, MEMBAR, 9, 5), mean(u, MEMBAR, 1, 1), mean(us, MEMBAR, 1, 1), mean(a, SECTORS, 9, 5),
         mean(u, SECTORS, 1, 1), mean(us, SECTORS, 1, 1), mean(a, READ, 9, 5), mean(u, READ, 1, 1),
         mean(us, READ, 1, 1), SMALL * 4);
  double em = 0;
  for (double e : each) em += e / each.size();
  printf("FINDING 4: in-place DRAM bytes written: auto one Start %.4g, user one Start %.4g, Start/Stop per kernel "
         "%.4g (16 MiB = %zu)\n",
         mean(pa, WRITE, 3, 2), mean(pu, WRITE, 3, 2), em, BIG * 4);
  fflush(stdout);
  // A fifth question, whether a user range's duration includes the gaps between launches, was
  // tried with the stream held on a host flag written after push, launch and pop were enqueued:
  // that deadlocks (a push waits for the GPU to reach it), so it is not asked here.
  return 0;
}
