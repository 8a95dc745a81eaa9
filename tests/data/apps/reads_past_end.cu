// A program that reads past the end of its last array, as Rodinia's srad_v2 does with its
// south neighbour on the last row (compute-sanitizer reports such reads; the values read are
// multiplied by zero, so the result does not depend on them). Run alone on an H100 it never
// faults: the driver has mapped memory of its own after the array. Prints "fault" and exits 3
// when the kernel faults.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

__global__ void add_next_row_times_zero(const float* in, float* out, int n, int row) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  // 0 * x is not folded without fast math (x could be NaN): the load past the end stays.
  if (i < n) out[i] = in[i] + 0.0f * in[i + row];
}

int main() {
  const int row = 4096, n = 4096 * 4096;  // 64 MiB: the array ends on a page boundary
  const std::size_t bytes = std::size_t(n) * sizeof(float);
  float *out = nullptr, *in = nullptr;
  // `in` allocated last: nothing of the program's lies after it.
  if (cudaMalloc(&out, bytes) != cudaSuccess || cudaMalloc(&in, bytes) != cudaSuccess) {
    std::printf("cannot allocate\n");
    return 2;
  }
  std::vector<float> host(n, 1.0f);
  cudaMemcpy(in, host.data(), bytes, cudaMemcpyHostToDevice);
  add_next_row_times_zero<<<(n + 255) / 256, 256>>>(in, out, n, row);
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
    std::printf("fault: %s\n", cudaGetErrorName(e));
    return 3;
  }
  cudaMemcpy(host.data(), out, bytes, cudaMemcpyDeviceToHost);
  double sum = 0;
  for (float v : host) sum += v;
  std::printf("sum %.0f\n", sum);
  return sum == double(n) ? 0 : 1;
}
