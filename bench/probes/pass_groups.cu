// Probe: can several one-pass counter groups share ONE range-profiler configuration, so that a
// change of group is a change of pass inside the configuration (cheap) instead of a new
// configuration (Disable + Enable + first Start, ~160 ms on an H200)?
//
// Strategies (the kernel is an in-place y[i] += 1 over 64 MiB; no memory restore, counters only):
//   reenable    one config per group; Disable + Enable between groups (what kreplay does today)
//   union-host  all groups' metrics in one CUPTI host object: CUPTI schedules the passes
//   passgroups  one NVPW raw-metrics pass group per user group (maxPassCount 1 each), so pass g
//               is group g by construction; range profiler runs the multi-pass config
// Build: nvcc -O2 -arch=sm_90 pass_groups.cu -lcuda -lcupti -lnvperf_host -o pass_groups
//        (host-only, no GPU: g++ -DHOST_ONLY -x c++ pass_groups.cu -lcupti -lnvperf_host)
// Run:   pass_groups host            pass counts on GH100 without a device
//        pass_groups <strategy> K N  N iterations of a window of K kernels under every group
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <nvperf_cuda_host.h>
#include <nvperf_host.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <set>
#include <string>
#include <vector>
#ifndef HOST_ONLY
#include <cuda.h>
#include <cuda_runtime.h>
#endif

#define CHECK_CUPTI(call)                                                                       \
  do {                                                                                          \
    CUptiResult r_ = (call);                                                                    \
    if (r_ != CUPTI_SUCCESS) {                                                                  \
      const char* s_ = nullptr;                                                                 \
      cuptiGetResultString(r_, &s_);                                                            \
      fprintf(stderr, "%s:%d %s failed: %d %s\n", __FILE__, __LINE__, #call, (int)r_, s_ ? s_ : ""); \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)
#define CHECK_NVPW(call)                                                                        \
  do {                                                                                          \
    NVPA_Status s_ = (call);                                                                    \
    if (s_ != NVPA_STATUS_SUCCESS) {                                                            \
      fprintf(stderr, "%s:%d %s failed: NVPA status %d\n", __FILE__, __LINE__, #call, (int)s_); \
      throw std::runtime_error(#call);                                                          \
    }                                                                                           \
  } while (0)

using Group = std::vector<std::string>;
static std::vector<Group> GROUPS = {
    {"sm__warps_launched.sum", "smsp__inst_executed.sum"},
    {"sm__warps_launched.sum", "dram__bytes_read.sum"},
    {"sm__warps_launched.sum", "lts__t_sectors.sum"},
    {"sm__warps_launched.sum", "dram__bytes_write.sum"},
};

static void groups_from_args(int argc, char** argv, int first) {
  if (argc <= first) return;
  GROUPS.clear();
  for (int i = first; i < argc; i++) {
    Group g;
    std::string a = argv[i];
    size_t pos = 0;
    while (pos <= a.size()) {
      size_t c = a.find(',', pos);
      if (c == std::string::npos) c = a.size();
      g.push_back(a.substr(pos, c - pos));
      pos = c + 1;
    }
    GROUPS.push_back(g);
  }
}

static double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static std::vector<const char*> ptrs(const std::vector<std::string>& v) {
  std::vector<const char*> p;
  for (auto& s : v) p.push_back(s.c_str());
  return p;
}

static std::vector<std::string> union_of(const std::vector<Group>& groups) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (auto& g : groups)
    for (auto& m : g)
      if (seen.insert(m).second) out.push_back(m);
  return out;
}

struct Host {
  CUpti_Profiler_Host_Object* obj = nullptr;
};

static Host host_for(const char* chip, const uint8_t* avail, const std::vector<std::string>& metrics) {
  CUpti_Profiler_Host_Initialize_Params init = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  init.pChipName = chip;
  init.pCounterAvailabilityImage = avail;
  CHECK_CUPTI(cuptiProfilerHostInitialize(&init));
  auto p = ptrs(metrics);
  CUpti_Profiler_Host_ConfigAddMetrics_Params add = {CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = init.pHostObject;
  add.ppMetricNames = p.data();
  add.numMetrics = p.size();
  CHECK_CUPTI(cuptiProfilerHostConfigAddMetrics(&add));
  return Host{init.pHostObject};
}

static std::vector<uint8_t> host_config(Host h) {
  CUpti_Profiler_Host_GetConfigImageSize_Params size = {CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = h.obj;
  CHECK_CUPTI(cuptiProfilerHostGetConfigImageSize(&size));
  std::vector<uint8_t> image(size.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params get = {CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  get.pHostObject = h.obj;
  get.configImageSize = image.size();
  get.pConfigImage = image.data();
  CHECK_CUPTI(cuptiProfilerHostGetConfigImage(&get));
  return image;
}

static size_t passes_of(std::vector<uint8_t>& image) {
  CUpti_Profiler_Host_GetNumOfPasses_Params p = {CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  p.configImageSize = image.size();
  p.pConfigImage = image.data();
  CHECK_CUPTI(cuptiProfilerHostGetNumOfPasses(&p));
  return p.numOfPasses;
}

// Raw counters a metric depends on, through the NVPW metrics evaluator.
static std::vector<std::string> raw_dependencies(NVPW_MetricsEvaluator* ev, const std::string& metric) {
  NVPW_MetricEvalRequest req;
  NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params conv = {
      NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params_STRUCT_SIZE};
  conv.pMetricsEvaluator = ev;
  conv.pMetricName = metric.c_str();
  conv.pMetricEvalRequest = &req;
  conv.metricEvalRequestStructSize = NVPW_MetricEvalRequest_STRUCT_SIZE;
  CHECK_NVPW(NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest(&conv));
  NVPW_MetricsEvaluator_GetMetricRawDependencies_Params deps = {NVPW_MetricsEvaluator_GetMetricRawDependencies_Params_STRUCT_SIZE};
  deps.pMetricsEvaluator = ev;
  deps.pMetricEvalRequests = &req;
  deps.numMetricEvalRequests = 1;
  deps.metricEvalRequestStructSize = NVPW_MetricEvalRequest_STRUCT_SIZE;
  deps.metricEvalRequestStrideSize = sizeof(NVPW_MetricEvalRequest);
  CHECK_NVPW(NVPW_MetricsEvaluator_GetMetricRawDependencies(&deps));
  std::vector<const char*> raw(deps.numRawDependencies), opt(deps.numOptionalRawDependencies);
  deps.ppRawDependencies = raw.data();
  deps.ppOptionalRawDependencies = opt.data();
  CHECK_NVPW(NVPW_MetricsEvaluator_GetMetricRawDependencies(&deps));
  std::vector<std::string> out;
  for (auto r : raw) out.push_back(r);
  if (getenv("PG_VERBOSE")) {
    fprintf(stderr, "%s ->", metric.c_str());
    for (auto& r : out) fprintf(stderr, " %s", r.c_str());
    fprintf(stderr, " (+%zu optional)\n", opt.size());
  }
  return out;
}

// One NVPW pass group per user group, maxPassCount 1 each.
static std::vector<uint8_t> passgroups_config(const char* chip, const uint8_t* avail, const std::vector<Group>& groups,
                                              size_t* nvpw_passes) {
  NVPW_InitializeHost_Params ih = {NVPW_InitializeHost_Params_STRUCT_SIZE};
  CHECK_NVPW(NVPW_InitializeHost(&ih));
  NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params sz = {
      NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params_STRUCT_SIZE};
  sz.pChipName = chip;
  sz.pCounterAvailabilityImage = avail;
  CHECK_NVPW(NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize(&sz));
  std::vector<uint8_t> scratch(sz.scratchBufferSize);
  NVPW_CUDA_MetricsEvaluator_Initialize_Params ei = {NVPW_CUDA_MetricsEvaluator_Initialize_Params_STRUCT_SIZE};
  ei.pScratchBuffer = scratch.data();
  ei.scratchBufferSize = scratch.size();
  ei.pChipName = chip;
  ei.pCounterAvailabilityImage = avail;
  CHECK_NVPW(NVPW_CUDA_MetricsEvaluator_Initialize(&ei));
  NVPW_CUDA_RawMetricsConfig_Create_V2_Params cr = {NVPW_CUDA_RawMetricsConfig_Create_V2_Params_STRUCT_SIZE};
  cr.activityKind = NVPA_ACTIVITY_KIND_PROFILER;
  cr.pChipName = chip;
  cr.pCounterAvailabilityImage = avail;
  CHECK_NVPW(NVPW_CUDA_RawMetricsConfig_Create_V2(&cr));
  NVPA_RawMetricsConfig* cfg = cr.pRawMetricsConfig;
  // A raw counter may belong to one pass group only: a counter shared by several groups is
  // collected in the first group's pass.
  std::set<std::string> seen;
  for (auto& g : groups) {
    std::vector<std::string> raw;
    for (auto& m : g)
      for (auto& r : raw_dependencies(ei.pMetricsEvaluator, m))
        if (seen.insert(r).second) raw.push_back(r);
    if (raw.empty()) continue;
    std::vector<NVPA_RawMetricRequest> reqs;
    for (auto& r : raw) {
      NVPA_RawMetricRequest q = {NVPA_RAW_METRIC_REQUEST_STRUCT_SIZE};
      q.pMetricName = r.c_str();
      q.isolated = getenv("PG_ISOLATED") ? atoi(getenv("PG_ISOLATED")) : 1;
      q.keepInstances = getenv("PG_KEEP") ? atoi(getenv("PG_KEEP")) : 1;
      reqs.push_back(q);
    }
    NVPW_RawMetricsConfig_BeginPassGroup_Params b = {NVPW_RawMetricsConfig_BeginPassGroup_Params_STRUCT_SIZE};
    b.pRawMetricsConfig = cfg;
    b.maxPassCount = 1;
    CHECK_NVPW(NVPW_RawMetricsConfig_BeginPassGroup(&b));
    NVPW_RawMetricsConfig_AddMetrics_Params a = {NVPW_RawMetricsConfig_AddMetrics_Params_STRUCT_SIZE};
    a.pRawMetricsConfig = cfg;
    a.pRawMetricRequests = reqs.data();
    a.numMetricRequests = reqs.size();
    CHECK_NVPW(NVPW_RawMetricsConfig_AddMetrics(&a));
    NVPW_RawMetricsConfig_EndPassGroup_Params e = {NVPW_RawMetricsConfig_EndPassGroup_Params_STRUCT_SIZE};
    e.pRawMetricsConfig = cfg;
    CHECK_NVPW(NVPW_RawMetricsConfig_EndPassGroup(&e));
  }
  NVPW_RawMetricsConfig_GenerateConfigImage_Params gen = {NVPW_RawMetricsConfig_GenerateConfigImage_Params_STRUCT_SIZE};
  gen.pRawMetricsConfig = cfg;
  gen.mergeAllPassGroups = 0;
  CHECK_NVPW(NVPW_RawMetricsConfig_GenerateConfigImage(&gen));
  NVPW_RawMetricsConfig_GetConfigImage_Params get = {NVPW_RawMetricsConfig_GetConfigImage_Params_STRUCT_SIZE};
  get.pRawMetricsConfig = cfg;
  CHECK_NVPW(NVPW_RawMetricsConfig_GetConfigImage(&get));
  std::vector<uint8_t> image(get.bytesCopied);
  get.bytesAllocated = image.size();
  get.pBuffer = image.data();
  CHECK_NVPW(NVPW_RawMetricsConfig_GetConfigImage(&get));
  NVPW_RawMetricsConfig_GetNumPasses_V2_Params np = {NVPW_RawMetricsConfig_GetNumPasses_V2_Params_STRUCT_SIZE};
  np.pRawMetricsConfig = cfg;
  CHECK_NVPW(NVPW_RawMetricsConfig_GetNumPasses_V2(&np));
  *nvpw_passes = np.numPasses;
  NVPW_RawMetricsConfig_Destroy_Params d = {NVPW_RawMetricsConfig_Destroy_Params_STRUCT_SIZE};
  d.pRawMetricsConfig = cfg;
  NVPW_RawMetricsConfig_Destroy(&d);
  NVPW_MetricsEvaluator_Destroy_Params ed = {NVPW_MetricsEvaluator_Destroy_Params_STRUCT_SIZE};
  ed.pMetricsEvaluator = ei.pMetricsEvaluator;
  NVPW_MetricsEvaluator_Destroy(&ed);
  return image;
}

static void host_report(const char* chip, const uint8_t* avail) {
  for (size_t g = 0; g < GROUPS.size(); g++) {
    auto img = host_config(host_for(chip, avail, GROUPS[g]));
    printf("group %zu: %zu pass(es), config %zu B\n", g, passes_of(img), img.size());
  }
  auto u = host_config(host_for(chip, avail, union_of(GROUPS)));
  printf("union-host: %zu pass(es), config %zu B\n", passes_of(u), u.size());
  size_t nvpw = 0;
  try {
    auto pg = passgroups_config(chip, avail, GROUPS, &nvpw);
    printf("passgroups: NVPW says %zu pass(es), CUPTI says %zu, config %zu B\n", nvpw, passes_of(pg), pg.size());
  } catch (std::exception& e) {
    printf("passgroups: not buildable (%s)\n", e.what());
  }
}

#ifndef HOST_ONLY
__global__ void inc(float* y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += 1.0f;
}

struct Profiler {
  CUcontext ctx;
  CUpti_RangeProfiler_Object* obj = nullptr;
  std::vector<uint8_t> counter_data;
  void enable() {
    CUpti_RangeProfiler_Enable_Params p = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    p.ctx = ctx;
    CHECK_CUPTI(cuptiRangeProfilerEnable(&p));
    obj = p.pRangeProfilerObject;
  }
  void disable() {
    CUpti_RangeProfiler_Disable_Params p = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = obj;
    CHECK_CUPTI(cuptiRangeProfilerDisable(&p));
    obj = nullptr;
  }
  void image(const std::vector<std::string>& metrics, size_t ranges) {
    auto p = ptrs(metrics);
    CUpti_RangeProfiler_GetCounterDataSize_Params s = {CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    s.pRangeProfilerObject = obj;
    s.pMetricNames = p.data();
    s.numMetrics = p.size();
    s.maxNumOfRanges = ranges;
    s.maxNumRangeTreeNodes = ranges;
    CHECK_CUPTI(cuptiRangeProfilerGetCounterDataSize(&s));
    counter_data.assign(s.counterDataSize, 0);
  }
  void init_image() {
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params i = {CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    i.pRangeProfilerObject = obj;
    i.counterDataSize = counter_data.size();
    i.pCounterData = counter_data.data();
    CHECK_CUPTI(cuptiRangeProfilerCounterDataImageInitialize(&i));
  }
  void set_config(std::vector<uint8_t>& config, size_t ranges) {
    CUpti_RangeProfiler_SetConfig_Params s = {CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    s.pRangeProfilerObject = obj;
    s.configSize = config.size();
    s.pConfig = config.data();
    s.counterDataImageSize = counter_data.size();
    s.pCounterDataImage = counter_data.data();
    s.range = CUPTI_AutoRange;
    s.replayMode = CUPTI_UserReplay;
    s.maxRangesPerPass = ranges;
    s.numNestingLevels = 1;
    s.minNestingLevel = 1;
    s.passIndex = 0;
    s.targetNestingLevel = 1;
    CHECK_CUPTI(cuptiRangeProfilerSetConfig(&s));
  }
  void start() {
    CUpti_RangeProfiler_Start_Params s = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    s.pRangeProfilerObject = obj;
    CHECK_CUPTI(cuptiRangeProfilerStart(&s));
  }
  bool stop(size_t* next_pass) {
    CUpti_RangeProfiler_Stop_Params s = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    s.pRangeProfilerObject = obj;
    CHECK_CUPTI(cuptiRangeProfilerStop(&s));
    *next_pass = s.passIndex;
    return s.isAllPassSubmitted != 0;
  }
  size_t decode() {
    CUpti_RangeProfiler_DecodeData_Params d = {CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    d.pRangeProfilerObject = obj;
    CHECK_CUPTI(cuptiRangeProfilerDecodeData(&d));
    CUpti_RangeProfiler_GetCounterDataInfo_Params i = {CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    i.pCounterDataImage = counter_data.data();
    i.counterDataImageSize = counter_data.size();
    CHECK_CUPTI(cuptiRangeProfilerGetCounterDataInfo(&i));
    return i.numTotalRanges;
  }
  std::vector<double> evaluate(Host h, const std::vector<std::string>& metrics, size_t range) {
    auto p = ptrs(metrics);
    std::vector<double> v(metrics.size(), NAN);
    CUpti_Profiler_Host_EvaluateToGpuValues_Params e = {CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    e.pHostObject = h.obj;
    e.pCounterDataImage = counter_data.data();
    e.counterDataImageSize = counter_data.size();
    e.rangeIndex = range;
    e.ppMetricNames = p.data();
    e.numMetrics = p.size();
    e.pMetricValues = v.data();
    CUptiResult r = cuptiProfilerHostEvaluateToGpuValues(&e);
    if (r != CUPTI_SUCCESS) printf("    evaluate failed: %d\n", (int)r);
    return v;
  }
};

static void print_values(const char* tag, const std::vector<std::string>& m, const std::vector<double>& v) {
  printf("    %s:", tag);
  for (size_t i = 0; i < m.size(); i++) printf(" %s=%.0f", m[i].c_str(), v[i]);
  printf("\n");
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "host";
  size_t K = argc > 2 ? atoi(argv[2]) : 1;
  int N = argc > 3 ? atoi(argv[3]) : 4;
  groups_from_args(argc, argv, 4);
  cudaFree(0);
  CUcontext ctx;
  cuCtxGetCurrent(&ctx);
  CUpti_Profiler_Initialize_Params pi = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CHECK_CUPTI(cuptiProfilerInitialize(&pi));
  CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  cn.deviceIndex = 0;
  CHECK_CUPTI(cuptiDeviceGetChipName(&cn));
  const char* chip = cn.pChipName;
  CUpti_Profiler_GetCounterAvailability_Params av = {CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  av.ctx = ctx;
  CHECK_CUPTI(cuptiProfilerGetCounterAvailability(&av));
  std::vector<uint8_t> avail(av.counterAvailabilityImageSize);
  av.pCounterAvailabilityImage = avail.data();
  CHECK_CUPTI(cuptiProfilerGetCounterAvailability(&av));
  host_report(chip, avail.data());
  if (mode == "host") return 0;

  const unsigned n = 16u << 20;  // 64 MiB of floats
  float* y;
  cudaMalloc(&y, n * sizeof(float));
  cudaMemset(y, 0, n * sizeof(float));
  auto run_window = [&]() {
    for (size_t k = 0; k < K; k++) inc<<<n / 256, 256>>>(y, n);
    cudaDeviceSynchronize();
  };
  run_window();

  auto all = union_of(GROUPS);
  Profiler prof{ctx};
  std::vector<std::vector<uint8_t>> group_configs;
  std::vector<Host> group_hosts;
  for (auto& g : GROUPS) {
    group_hosts.push_back(host_for(chip, avail.data(), g));
    group_configs.push_back(host_config(group_hosts.back()));
  }
  Host union_host = host_for(chip, avail.data(), all);
  std::vector<uint8_t> config;
  size_t nvpw = 0;
  if (mode == "union-host") config = host_config(union_host);
  if (mode == "group0") config = group_configs[0];
  if (mode == "passgroups") {
    try {
      config = passgroups_config(chip, avail.data(), GROUPS, &nvpw);
    } catch (std::exception&) {
      return 3;
    }
  }
  printf("mode %s, K=%zu kernels per window, N=%d iterations, %zu groups\n", mode.c_str(), K, N, GROUPS.size());

  for (int it = 0; it < N; it++) {
    double t0 = now_ms();
    std::vector<double> pass_ms;
    if (mode == "reenable") {
      for (size_t g = 0; g < GROUPS.size(); g++) {
        double p0 = now_ms();
        if (prof.obj) prof.disable();
        prof.enable();
        prof.image(GROUPS[g], K);
        prof.init_image();
        prof.set_config(group_configs[g], K);
        prof.start();
        run_window();
        size_t next;
        bool done = prof.stop(&next);
        size_t ranges = prof.decode();
        pass_ms.push_back(now_ms() - p0);
        auto v0 = prof.evaluate(group_hosts[g], GROUPS[g], 0);
        auto vl = prof.evaluate(group_hosts[g], GROUPS[g], ranges - 1);
        if (it == 0 || it == N - 1) {
          printf("  it %d group %zu: done=%d ranges=%zu\n", it, g, (int)done, ranges);
          print_values("range 0", GROUPS[g], v0);
          print_values("last range", GROUPS[g], vl);
        }
      }
    } else {
      // union-host: image init + SetConfig every iteration (what the range profiler samples do);
      // union-keep: SetConfig once, image sized for K*N ranges, never re-initialised;
      // union-reinit: image re-initialised every iteration, SetConfig once.
      bool keep = getenv("PG_KEEP_CONFIG") && atoi(getenv("PG_KEEP_CONFIG")) == 1;
      bool reinit = getenv("PG_KEEP_CONFIG") && atoi(getenv("PG_KEEP_CONFIG")) == 2;
      if (!prof.obj) {
        prof.enable();
        prof.image(all, keep ? K * N : K);
        prof.init_image();
        prof.set_config(config, keep ? K * N : K);
      } else if (reinit) {
        prof.init_image();
      } else if (!keep) {
        prof.init_image();
        prof.set_config(config, K);
      }
      bool done = false;
      size_t passes = 0, next = 0;
      std::vector<size_t> indices;
      while (!done && passes < 16) {
        double p0 = now_ms();
        prof.start();
        run_window();
        done = prof.stop(&next);
        indices.push_back(next);
        pass_ms.push_back(now_ms() - p0);
        passes++;
      }
      double d0 = now_ms();
      size_t ranges = prof.decode();
      double decode_ms = now_ms() - d0;
      auto v0 = prof.evaluate(union_host, all, ranges >= K ? ranges - K : 0);
      auto vl = prof.evaluate(union_host, all, ranges - 1);
      printf("  it %d: decode %.2f ms, %zu ranges in the image\n", it, decode_ms, ranges);
      if (it == 0 || it == N - 1) {
        printf("  it %d: %zu passes, ranges=%zu, next pass indices:", it, passes, ranges);
        for (auto i : indices) printf(" %zu", i);
        printf("\n");
        print_values("range 0", all, v0);
        print_values("last range", all, vl);
        // Per-group evaluation with each group's own host object, on the shared image.
        for (size_t g = 0; g < GROUPS.size(); g++) {
          auto vg = prof.evaluate(group_hosts[g], GROUPS[g], 0);
          char tag[64];
          snprintf(tag, sizeof tag, "group %zu host, range 0", g);
          print_values(tag, GROUPS[g], vg);
        }
      }
    }
    double total = now_ms() - t0;
    printf("  it %d: total %.1f ms, per pass:", it, total);
    for (auto p : pass_ms) printf(" %.1f", p);
    printf(" ; per kernel per pass %.2f ms\n", total / pass_ms.size() / K);
  }
  if (prof.obj) prof.disable();
  printf("expected warps %u, lts sectors ~%u, dram bytes ~%u\n", n / 32, n * 2 * 4 / 32, n * 4);
  return 0;
}
#else
int main(int argc, char** argv) {
  groups_from_args(argc, argv, 1);
  host_report("GH100", nullptr);
  return 0;
}
#endif
