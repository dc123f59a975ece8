// Probe: ONE range-profiler object for the whole run, ONE configuration image holding every
// hardware pass, CUPTI advancing the pass index (reference nvidia-cupti.md §10 strategy A), with
// the image built by one cuptiProfilerHostConfigAddMetrics call per hardware pass: on the host
// (GH100, no GPU) each call is its own pass group, so pass k of the image is exactly the k-th
// call's metrics (checked with NVPW_Config_GetRawCounters). Questions for the GPU:
//   1. Does every metric come from the pass it was added for? Pass p launches kernels (p+1) times
//      as large, so each value says which pass measured it.
//   2. What does a pass cost (Start, Stop) for windows of K kernels, and a window's set-up
//      (image initialisation + SetConfig), decode and evaluation?
//   3. Can a window start again with only CounterDataImageInitialize (no SetConfig)?
//   4. Do memsets and copies between the kernels of a pass make ranges (they must not)? Do
//      kernels on another stream count?
// Build: nvcc -O2 -arch=sm_90 scheduled_passes.cu -lcuda -lcupti -o scheduled_passes
// Run:   scheduled_passes            (prints one line per finding, "FINDING ..." lines last)
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
#include <string>
#include <vector>

#define CK(call)                                                                              \
  do {                                                                                        \
    CUptiResult r_ = (call);                                                                  \
    if (r_ != CUPTI_SUCCESS) {                                                                \
      const char* s_ = nullptr;                                                               \
      cuptiGetResultString(r_, &s_);                                                          \
      printf("%s:%d %s failed: %d %s\n", __FILE__, __LINE__, #call, (int)r_, s_ ? s_ : "");   \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

static double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Hardware passes as kreplay packs the headline groups on GH100: [0+2, 1, 3].
static const std::vector<std::vector<std::string>> PASSES = {
    {"sm__warps_launched.sum", "smsp__inst_executed.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
     "dram__sectors_read.sum", "lts__t_sectors_op_read.sum"},
    {"smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"},
    {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "lts__t_sectors_op_write.sum"},
};
static const size_t MAX_RANGES = 128;

__global__ void work(float* y, unsigned n, float a) {
  __shared__ float s[1024];
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  s[(threadIdx.x * 32) % 1024] = (float)threadIdx.x;  // 32-way bank conflicts
  __syncthreads();
  float v = s[(threadIdx.x * 32 + 1) % 1024];
  if (i < n) y[i] = y[i] * a + v;
}

struct Rp {
  CUcontext ctx;
  CUpti_RangeProfiler_Object* obj = nullptr;
  CUpti_Profiler_Host_Object* host = nullptr;
  std::vector<uint8_t> config, data;
  std::vector<std::string> names;
  std::vector<const char*> name_ptrs;
  double t_start = 0, t_stop = 0;

  void build(const char* chip, const uint8_t* avail) {
    CUpti_Profiler_Host_Initialize_Params init = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    init.pChipName = chip;
    init.pCounterAvailabilityImage = avail;
    CK(cuptiProfilerHostInitialize(&init));
    host = init.pHostObject;
    for (auto& pass : PASSES) {
      std::vector<const char*> p;
      for (auto& m : pass) {
        p.push_back(m.c_str());
        names.push_back(m);
      }
      CUpti_Profiler_Host_ConfigAddMetrics_Params add = {CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
      add.pHostObject = host;
      add.ppMetricNames = p.data();
      add.numMetrics = p.size();
      CK(cuptiProfilerHostConfigAddMetrics(&add));
    }
    for (auto& n : names) name_ptrs.push_back(n.c_str());
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
    printf("image: %zu passes (%zu packed), %zu bytes\n", np.numOfPasses, PASSES.size(), config.size());
  }
  void enable() {
    double t = now_ms();
    CUpti_RangeProfiler_Enable_Params p = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    p.ctx = ctx;
    CK(cuptiRangeProfilerEnable(&p));
    obj = p.pRangeProfilerObject;
    CUpti_RangeProfiler_GetCounterDataSize_Params s = {CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    s.pRangeProfilerObject = obj;
    s.pMetricNames = name_ptrs.data();
    s.numMetrics = name_ptrs.size();
    s.maxNumOfRanges = MAX_RANGES;
    s.maxNumRangeTreeNodes = MAX_RANGES;
    CK(cuptiRangeProfilerGetCounterDataSize(&s));
    data.assign(s.counterDataSize, 0);
    printf("enable + counter data size: %.1f ms (%zu bytes)\n", now_ms() - t, data.size());
  }
  void disable() {
    CUpti_RangeProfiler_Disable_Params p = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = obj;
    CK(cuptiRangeProfilerDisable(&p));
    obj = nullptr;
  }
  double begin_window(bool set_config) {
    double t = now_ms();
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params i = {
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    i.pRangeProfilerObject = obj;
    i.counterDataSize = data.size();
    i.pCounterData = data.data();
    CK(cuptiRangeProfilerCounterDataImageInitialize(&i));
    if (set_config) {
      CUpti_RangeProfiler_SetConfig_Params s = {CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
      s.pRangeProfilerObject = obj;
      s.configSize = config.size();
      s.pConfig = config.data();
      s.counterDataImageSize = data.size();
      s.pCounterDataImage = data.data();
      s.range = CUPTI_AutoRange;
      s.replayMode = CUPTI_UserReplay;
      s.maxRangesPerPass = MAX_RANGES;
      s.numNestingLevels = 1;
      s.minNestingLevel = 1;
      s.passIndex = 0;
      s.targetNestingLevel = 1;
      CK(cuptiRangeProfilerSetConfig(&s));
    }
    return now_ms() - t;
  }
  void start() {
    double t = now_ms();
    CUpti_RangeProfiler_Start_Params s = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    s.pRangeProfilerObject = obj;
    CK(cuptiRangeProfilerStart(&s));
    t_start = now_ms() - t;
  }
  // Returns CUPTI's next pass index; *all = isAllPassSubmitted.
  size_t stop(bool* all) {
    double t = now_ms();
    CUpti_RangeProfiler_Stop_Params s = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    s.pRangeProfilerObject = obj;
    CK(cuptiRangeProfilerStop(&s));
    t_stop = now_ms() - t;
    *all = s.isAllPassSubmitted != 0;
    return s.passIndex;
  }
  size_t decode() {
    CUpti_RangeProfiler_DecodeData_Params d = {CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    d.pRangeProfilerObject = obj;
    CK(cuptiRangeProfilerDecodeData(&d));
    CUpti_RangeProfiler_GetCounterDataInfo_Params i = {CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    i.pCounterDataImage = data.data();
    i.counterDataImageSize = data.size();
    CK(cuptiRangeProfilerGetCounterDataInfo(&i));
    if (d.numOfRangeDropped) printf("  %zu ranges dropped\n", d.numOfRangeDropped);
    return i.numTotalRanges;
  }
  std::vector<double> eval(size_t range) {
    std::vector<double> v(names.size(), NAN);
    CUpti_Profiler_Host_EvaluateToGpuValues_Params e = {CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    e.pHostObject = host;
    e.pCounterDataImage = data.data();
    e.counterDataImageSize = data.size();
    e.rangeIndex = range;
    e.ppMetricNames = name_ptrs.data();
    e.numMetrics = name_ptrs.size();
    e.pMetricValues = v.data();
    CUptiResult r = cuptiProfilerHostEvaluateToGpuValues(&e);
    if (r != CUPTI_SUCCESS) printf("  evaluate range %zu failed: %d\n", range, (int)r);
    return v;
  }
};

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

  const unsigned block = 256, base_blocks = 16384;  // pass p: (p+1) * 16 MiB of floats
  const unsigned most = base_blocks * block * PASSES.size();
  float *y, *scratch;
  cudaMalloc(&y, most * sizeof(float));
  cudaMalloc(&scratch, 1 << 20);
  cudaMemset(y, 0, most * sizeof(float));
  std::vector<char> host_bytes(1 << 20, 1);
  cudaStream_t side;
  cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  // Unprofiled: the per-pass unit values (pass p should read (p+1) times these).
  for (int i = 0; i < 3; i++) work<<<base_blocks, block>>>(y, base_blocks * block, 1.0001f);
  cudaDeviceSynchronize();

  Rp rp{ctx};
  rp.build(cn.pChipName, avail.data());
  rp.enable();
  bool ok_all = true;
  std::vector<double> unit;  // values of pass-0-sized kernels, from the first window's pass 0
  // Window 0 calibrates: every pass runs the base-size kernel, so its values are each metric's
  // unit. Later windows scale pass p's kernels by p+1.
  for (size_t K : {1, 1, 16, 64, 128}) {
    for (int it = 0; it < (unit.empty() ? 1 : 3); it++) {
      bool calibrating = unit.empty();
      double t0 = now_ms();
      double setup = rp.begin_window(true);
      std::vector<double> starts, stops;
      std::vector<size_t> next;
      bool all = false;
      size_t pass = 0;
      double work_ms = 0;
      while (!all && pass < 8) {
        rp.start();
        starts.push_back(rp.t_start);
        double w = now_ms();
        unsigned blocks = base_blocks * (calibrating ? 1 : pass + 1);
        for (size_t k = 0; k < K; k++) {
          cudaStream_t s = (pass == 1 && k % 2) ? side : 0;
          work<<<blocks, block, 0, s>>>(y, blocks * block, 1.0001f);
          if (pass == 0 && K == 16) {  // calls between kernels: must make no ranges
            cudaMemsetAsync(scratch, 0, 4096);
            cudaMemcpyAsync(scratch + 1024, scratch, 4096, cudaMemcpyDeviceToDevice);
            cudaMemcpyAsync(scratch + 4096, host_bytes.data(), 4096, cudaMemcpyHostToDevice);
            cudaDeviceSynchronize();
          }
        }
        cudaDeviceSynchronize();
        work_ms += now_ms() - w;
        next.push_back(rp.stop(&all));
        stops.push_back(rp.t_stop);
        pass++;
      }
      double d0 = now_ms();
      size_t ranges = rp.decode();
      double decode_ms = now_ms() - d0;
      double e0 = now_ms();
      std::vector<std::vector<double>> values;
      for (size_t r = 0; r < ranges; r++) values.push_back(rp.eval(r));
      double eval_ms = now_ms() - e0;
      double total = now_ms() - t0;
      if (calibrating) {
        if (ranges == 0) {
          printf("calibration window measured nothing\n");
          return 1;
        }
        unit = values[0];
        printf("calibration: %zu passes, %zu ranges, values:", pass, ranges);
        for (size_t i = 0; i < unit.size(); i++) printf(" %s=%.0f", rp.names[i].c_str(), unit[i]);
        printf("\n");
        continue;
      }
      // Attribution: metric m of packed pass p must read about (p+1) x unit.
      int wrong = 0, nan = 0;
      size_t idx = 0;
      for (size_t p = 0; p < PASSES.size(); p++)
        for (size_t m = 0; m < PASSES[p].size(); m++, idx++)
          for (size_t r = 0; r < ranges; r++) {
            double v = values[r][idx];
            if (std::isnan(v)) { nan++; continue; }
            double ratio = unit[idx] > 0 ? v / unit[idx] : 0;
            bool dram = PASSES[p][m].rfind("dram__", 0) == 0;
            double tol = dram ? 0.35 : 0.02;
            if (std::fabs(ratio - (p + 1)) > tol * (p + 1)) {
              if (wrong < 4)
                printf("  K=%zu it %d range %zu: %s = %.0f, %.2fx the unit (pass %zu expected)\n", K, it, r,
                       PASSES[p][m].c_str(), v, ratio, p);
              wrong++;
            }
          }
      bool ok = ranges == K && wrong == 0 && nan == 0 && pass == PASSES.size();
      ok_all = ok_all && ok;
      printf("K=%zu it %d: %zu passes (next indices", K, it, pass);
      for (auto n : next) printf(" %zu", n);
      printf("), %zu ranges, setup %.2f ms, start", ranges, setup);
      for (auto s : starts) printf(" %.1f", s);
      printf(" ms, stop");
      for (auto s : stops) printf(" %.1f", s);
      printf(" ms, kernels %.1f ms, decode %.2f ms, eval %.2f ms, total %.1f ms = %.2f ms per kernel; %s\n",
             work_ms, decode_ms, eval_ms, total, total / K, ranges ? (ok ? "attribution OK" : "WRONG") : "no ranges");
    }
  }
  // 3. A window without SetConfig: image re-initialised only.
  {
    rp.begin_window(false);
    bool all = false;
    size_t pass = 0;
    std::vector<size_t> next;
    bool failed = false;
    while (!all && pass < 4) {
      CUpti_RangeProfiler_Start_Params s = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
      s.pRangeProfilerObject = rp.obj;
      CUptiResult r = cuptiRangeProfilerStart(&s);
      if (r != CUPTI_SUCCESS) {
        printf("no-SetConfig window: Start failed %d\n", (int)r);
        failed = true;
        break;
      }
      for (int k = 0; k < 4; k++) work<<<base_blocks * (pass + 1), block>>>(y, base_blocks * block * (pass + 1), 1.0f);
      cudaDeviceSynchronize();
      next.push_back(rp.stop(&all));
      pass++;
    }
    size_t ranges = failed ? 0 : rp.decode();
    printf("FINDING no-SetConfig window: %s, %zu passes, %zu ranges, first value %.0f (unit %.0f)\n",
           failed ? "failed" : "ran", pass, ranges, ranges ? rp.eval(0)[0] : NAN, unit.empty() ? NAN : unit[0]);
  }
  double t = now_ms();
  rp.disable();
  rp.enable();
  rp.begin_window(true);
  rp.start();
  printf("FINDING disable+enable+first start: %.1f ms\n", now_ms() - t);
  bool all;
  rp.stop(&all);
  printf("FINDING attribution over all windows: %s\n", ok_all ? "every metric from its own pass" : "WRONG somewhere");
  return ok_all ? 0 : 1;
}
