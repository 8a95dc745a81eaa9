// A CUDA heat-equation application built with plain nvcc (static CUDA runtime), for recording
// with `r3 record -- cuda_heat N STEPS` (tests/gpu/test_cuda_recorder.cpp).
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "check.cuh"
#include "heat_kernels.cuh"

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  if (n < 3 || steps < 1) {
    std::fprintf(stderr, "usage: cuda_heat [N >= 3 [STEPS >= 1]]\n");
    return 2;
  }
  std::vector<float> host(std::size_t(n) * n, 0.0f);
  for (int y = n / 4; y < 3 * n / 4; ++y)
    for (int x = n / 4; x < 3 * n / 4; ++x) host[std::size_t(y) * n + x] = 1.0f;
  float *a = nullptr, *b = nullptr;
  double* partial = nullptr;
  const int blocks = 120;
  CHECK(cudaMalloc(&a, host.size() * sizeof(float)));
  CHECK(cudaMalloc(&b, host.size() * sizeof(float)));
  CHECK(cudaMalloc(&partial, blocks * sizeof(double)));
  CHECK(cudaMemcpy(a, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  const dim3 block(16, 16), grid((n + 15) / 16, (n + 15) / 16);
  for (int s = 0; s < steps; ++s) {
    heat_step<<<grid, block>>>(a, b, n, 0.2f);
    heat_boundary<<<(n + 255) / 256, 256>>>(a, b, n);
    CHECK(cudaGetLastError());
    std::swap(a, b);
  }
  heat_total<<<blocks, 256>>>(a, n * n, partial);
  std::vector<double> sums(blocks);
  CHECK(cudaMemcpy(sums.data(), partial, blocks * sizeof(double), cudaMemcpyDeviceToHost));
  double total = 0;
  for (double v : sums) total += v;
  std::printf("heat after %d steps on %d x %d: total heat %.6f\n", steps, n, n, total);
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(partial));
  return 0;
}
