// The CUDA version of the default demo's kernel (stencil.cpp): one explicit (Jacobi) step of the
// 2D heat equation on an n x n grid (five-point stencil; the boundary stays fixed), adding how
// much the grid changed to *change in double precision. Each block reduces its threads' changes
// (warp shuffles, then one warp over the warps' sums) and adds the block's sum atomically, so any
// block of whole warps, up to 1024 threads, gives the same result within rounding.
extern "C" __global__ void stencil2d(const float* in, float* out, int n, float alpha,
                                     double* change) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  double diff = 0.0;
  if (x >= 1 && y >= 1 && x < n - 1 && y < n - 1) {
    const int i = y * n + x;
    const float next =
        in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i]);
    out[i] = next;
    diff = next > in[i] ? next - in[i] : in[i] - next;
  }
  __shared__ double warp_sums[32];
  const int thread = threadIdx.y * blockDim.x + threadIdx.x;
  for (int offset = 16; offset > 0; offset /= 2) diff += __shfl_down_sync(0xffffffffu, diff, offset);
  if (thread % 32 == 0) warp_sums[thread / 32] = diff;
  __syncthreads();
  if (thread < 32) {
    const int warps = (blockDim.x * blockDim.y + 31) / 32;
    double sum = thread < warps ? warp_sums[thread] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (thread == 0) atomicAdd(change, sum);
  }
}
