// The CUDA demo's capture: one step of stencil.cu on the GPU, on an n x n grid with a hot square
// in it (the host demo's initial state), its memory read before and after the launch and written
// as a CUDA capture with the kernel's source, PTX and cubin. This is what `r3 record` will write
// for an unmodified CUDA application once its CUPTI recorder exists; until then the demo records
// its launch itself (through the driver, the code compiled by NVRTC).
//
// Usage: stencil_cuda_record OUTPUT.h5 [N]   (N: grid side, a multiple of 16; default 4096)
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <vector>

#include "cuda_capture.hpp"
#include "driver.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUTPUT.h5 [N]   (N a multiple of 16, default 4096)\n", argv[0]);
    return 2;
  }
  const int n = argc > 2 ? std::atoi(argv[2]) : 4096;
  if (n < 16 || n % 16 != 0) {
    std::fprintf(stderr, "%s: N must be a multiple of 16 (got %s)\n", argv[0], argv[2]);
    return 2;
  }
  if (std::string why = r3::replay::cuda::why_unavailable(); !why.empty()) {
    std::fprintf(stderr, "%s: %s\n", argv[0], why.c_str());
    return 3;
  }
  std::ifstream file(R3_KERNEL_SOURCE);
  std::stringstream source;
  source << file.rdbuf();
  if (!file) {
    std::fprintf(stderr, "%s: cannot read %s\n", argv[0], R3_KERNEL_SOURCE);
    return 1;
  }
  using namespace r3;
  test::CudaLaunchSpec spec;
  spec.source = source.str();
  spec.entry = "stencil2d";
  spec.grid = {static_cast<std::uint32_t>(n / 16), static_cast<std::uint32_t>(n / 16), 1};
  spec.block = {16, 16, 1};
  std::vector<float> in(static_cast<std::size_t>(n) * n, 0.0f), out(in.size(), 0.0f);
  for (int y = n / 4; y < n / 2; ++y)
    for (int x = n / 4; x < n / 2; ++x) in[static_cast<std::size_t>(y) * n + x] = 100.0f;
  std::vector<double> change(1, 0.0);
  spec.buffers.push_back({"in", test::bytes_of(in), capture::ElementType::f32, {}});
  spec.buffers.push_back({"out", test::bytes_of(out), capture::ElementType::f32, {}});
  spec.buffers.push_back({"change", test::bytes_of(change), capture::ElementType::f64, {}});
  spec.args = {test::pointer_arg(0), test::pointer_arg(1), test::value_arg(n, "int"),
               test::value_arg(0.2f, "float"), test::pointer_arg(2)};
  try {
    const std::string kernel = test::record_cuda_launch(argv[1], spec);
    std::printf("stencil_cuda_record: kernel %s, %d x %d grid (2 x %.0f MiB), recorded to %s\n",
                kernel.c_str(), n, n, double(in.size()) * 4 / (1 << 20), argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  return 0;
}
