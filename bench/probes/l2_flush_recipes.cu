// Probe (bench/probes/l2_flush.sh): flush recipes, in the app's context or a private one; run under
// ncu --cache-control none -k regex:victim. Kernels: l2_flush_kernels.cu as PTX in $FLUSHK_PTX.
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#define CK(x) do { auto e = (x); if (e) { fprintf(stderr, "%s:%d error %d\n", __FILE__, __LINE__, (int)e); exit(1);} } while (0)

__global__ void warm_read(const float4* x, size_t n, float* out) {
  float acc = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) { float4 v = x[i]; acc += v.x + v.w; }
  if (acc == 12345.f) out[0] = acc;
}
__global__ void victim_read(const float4* x, size_t n, float* out) {
  float acc = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) { float4 v = x[i]; acc += v.x + v.w; }
  if (acc == 12345.f) out[0] = acc;
}
__global__ void victim_inplace(float4* x, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) { float4 v = x[i]; v.x += 1; x[i] = v; }
}

int main(int argc, char** argv) {
  std::string recipe = argc > 1 ? argv[1] : "none";   // e.g. read3, evl+discard, pf+discard, read3+discard, fused
  bool priv = argc > 2 && !strcmp(argv[2], "ctx");
  const char* victim = argc > 3 ? argv[3] : "read";
  double mult = argc > 4 ? atof(argv[4]) : 1.25;
  const char* ptx = getenv("FLUSHK_PTX");
  int l2 = 0; CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  size_t vbytes = 16u << 20, fbytes = (size_t)(l2 * mult);
  float4* v; float* out; CK(cudaMalloc(&v, vbytes)); CK(cudaMalloc(&out, 16)); CK(cudaMemset(v, 0, vbytes));
  cudaStream_t s; CK(cudaStreamCreate(&s));
  CUcontext app; CK(cuCtxGetCurrent(&app)); CUdevice dev; CK(cuCtxGetDevice(&dev));
  CUcontext fctx = app;
  if (priv) { CUctxCreateParams cp; memset(&cp, 0, sizeof cp); CK(cuCtxCreate(&fctx, &cp, 0, dev)); }
  else CK(cuCtxPushCurrent(fctx));
  CUmodule m; CK(cuModuleLoad(&m, ptx));
  CUfunction fr, fe, fp, fd, ff; CK(cuModuleGetFunction(&fr, m, "sweep_read")); CK(cuModuleGetFunction(&fe, m, "sweep_evl"));
  CK(cuModuleGetFunction(&fp, m, "sweep_pf_evl")); CK(cuModuleGetFunction(&fd, m, "sweep_discard"));
  CK(cuModuleGetFunction(&ff, m, "sweep_read3_discard"));
  CUdeviceptr buf, fout; CK(cuMemAlloc(&buf, fbytes)); CK(cuMemAlloc(&fout, 16)); CK(cuMemsetD8(buf, 0, fbytes));
  CK(cuMemsetD8(fout, 0, 16));
  CUstream fs = (CUstream)s; if (priv) CK(cuStreamCreate(&fs, CU_STREAM_NON_BLOCKING));
  CUevent a, b; CK(cuEventCreate(&b, CU_EVENT_DISABLE_TIMING));
  CK(cuCtxSynchronize());
  CUcontext popped; CK(cuCtxPopCurrent(&popped)); if (priv) CK(cuCtxSetCurrent(app));
  CK(cuEventCreate(&a, CU_EVENT_DISABLE_TIMING));
  auto launch = [&](CUfunction f) { void* args[] = {&buf, &fbytes, &fout}; CK(cuLaunchKernel(f, 132 * 8, 1, 1, 512, 1, 1, 0, fs, args, nullptr)); };
  auto flush = [&]() {
    if (recipe == "none") return;
    if (priv) { CK(cuEventRecord(a, (CUstream)s)); CK(cuCtxPushCurrent(fctx)); CK(cuStreamWaitEvent(fs, a, 0)); }
    else CK(cuCtxPushCurrent(fctx));
    std::string r = recipe; size_t pos = 0;
    while (pos < r.size()) {
      size_t e = r.find('+', pos); std::string step = r.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
      pos = e == std::string::npos ? r.size() : e + 1;
      if (step == "read") launch(fr); else if (step == "read3") { launch(fr); launch(fr); launch(fr); }
      else if (step == "evl") launch(fe); else if (step == "pf") launch(fp); else if (step == "discard") launch(fd);
      else if (step == "fused") launch(ff);
      else if (step == "memset") CK(cuMemsetD8Async(buf, 1, fbytes, fs));
      else { fprintf(stderr, "unknown step %s\n", step.c_str()); exit(2); }
    }
    if (priv) { CK(cuEventRecord(b, fs)); CK(cuCtxPopCurrent(&popped)); CK(cuStreamWaitEvent((CUstream)s, b, 0)); }
    else CK(cuCtxPopCurrent(&popped));
  };
  size_t n = vbytes / 16;
  for (int it = 0; it < 6; it++) {
    warm_read<<<264, 512, 0, s>>>(v, n, out);
    flush();
    if (!strcmp(victim, "read")) victim_read<<<264, 512, 0, s>>>(v, n, out);
    else if (!strcmp(victim, "small")) victim_read<<<8, 512, 0, s>>>(v, (64u << 10) / 16, out);
    else victim_inplace<<<264, 512, 0, s>>>(v, n);
    CK(cudaStreamSynchronize(s));
  }
  // cost: 50 x (tiny kernel, flush), wall per flush minus wall per tiny kernel alone
  auto t = [&](bool f) { auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 50; i++) { warm_read<<<1, 32, 0, s>>>(v, 1, out); if (f) flush(); }
    CK(cudaStreamSynchronize(s)); return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 50; };
  t(true); double with = t(true), without = t(false);
  printf("recipe=%s ctx=%d victim=%s mult=%.2f flush_us=%.1f\n", recipe.c_str(), priv, victim, mult, with - without);
  return 0;
}
