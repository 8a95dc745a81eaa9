// A whole CUDA application as users write them: system headers, a helper header, macros, a
// struct, __constant__ data, device functions, a template kernel in a namespace, a plain kernel,
// and host code with <<<>>> launches. r3 extract must cut each kernel's device-only unit from it.
#include <stdio.h>
#include <stdlib.h>
#include <cooperative_groups.h>
#include "app_helpers.cuh"

#define BLOCK 128
#define SCALE_OF(p) ((p).scale * 2.0f)
#define UNUSED_BY_KERNELS 42

namespace cg = cooperative_groups;

struct Params {
  float scale;
  int n;
};

__constant__ float weights[3];

static __device__ float blend(float x) { return weights[0] * x + weights[1] * SQUARE(x); }

namespace app {
template <int UNROLL>
__global__ void scale(const float* in, float* out, Params p) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * UNROLL;
  for (int u = 0; u < UNROLL; ++u)
    if (i + u < p.n) out[i + u] = SCALE_OF(p) * blend(in[i + u]);
}
}  // namespace app

__global__ void pairs(const float* in, float* out, int n) {
  cg::thread_block block = cg::this_thread_block();
  int i = blockIdx.x * BLOCK + threadIdx.x;
  block.sync();
  if (i + 1 < n) out[i] = smooth(in[i], in[i + 1]);
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1024;
  float *in, *out;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  Params p{1.5f, n};
  app::scale<4><<<(n / 4 + BLOCK - 1) / BLOCK, BLOCK>>>(in, out, p);
  pairs<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(in, out, n);
  cudaDeviceSynchronize();
  print_banner("done");
  printf("%d\n", UNUSED_BY_KERNELS);
  return 0;
}
