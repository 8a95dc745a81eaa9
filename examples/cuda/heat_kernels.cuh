// The kernels of heat.cu, in a file of their own so that r3 can compile variants of them with
// NVRTC (tune.yaml: kernels[].source). C++ names, as an application has them.
#pragma once

// One explicit step of the 2D heat equation on the interior of an n x n grid.
__global__ void heat_step(const float* __restrict__ in, float* __restrict__ out, int n,
                          float alpha) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= n - 1 || y >= n - 1) return;
  const int i = y * n + x;
  out[i] = in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i]);
}

// Fixed boundary: copies the edge of `in` to `out`.
__global__ void heat_boundary(const float* __restrict__ in, float* __restrict__ out, int n) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  out[k] = in[k];
  out[(n - 1) * n + k] = in[(n - 1) * n + k];
  out[k * n] = in[k * n];
  out[k * n + n - 1] = in[k * n + n - 1];
}

// Sum of the grid, one partial sum per block (the host adds the partials).
__global__ void heat_total(const float* __restrict__ u, int count, double* __restrict__ partial) {
  __shared__ double sums[256];
  double s = 0.0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    s += u[i];
  sums[threadIdx.x] = s;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}
