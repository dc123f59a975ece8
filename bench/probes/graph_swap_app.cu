// Probe application for graph_swap_inject.c: a captured graph of two kernels (plus a memset),
// its source graph destroyed right after instantiation, launched 3 times. Alone it prints 33.
#include <cstdio>
__global__ void inc(int *c, int v) { atomicAdd(c, v); }
int main() {
  int *c;
  cudaMalloc(&c, sizeof(int));
  cudaMemset(c, 0, sizeof(int));
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaGraph_t g;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  inc<<<1, 1, 0, s>>>(c, 1);
  inc<<<1, 1, 0, s>>>(c, 10);
  cudaStreamEndCapture(s, &g);
  cudaGraphExec_t e;
  cudaGraphInstantiate(&e, g, 0);
  cudaGraphDestroy(g);
  for (int i = 0; i < 3; i++) cudaGraphLaunch(e, s);
  cudaStreamSynchronize(s);
  int h = 0;
  cudaMemcpy(&h, c, sizeof h, cudaMemcpyDeviceToHost);
  printf("counter %d (%s)\n", h, cudaGetErrorString(cudaGetLastError()));
  return 0;
}
