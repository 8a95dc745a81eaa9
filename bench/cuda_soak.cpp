// cuda_soak: the CUDA backend over thousands of candidates, each compiled anew (NVRTC, a define
// that differs), run, verified and timed as an evaluator does. Device memory in use (cuMemGetInfo)
// and host RSS are printed after 100, 1000 and the last candidate: both must stay flat, since the
// backend keeps only its most recently used modules and compiled variants and owns every CUDA
// handle (modules, stream, events, buffers) with RAII.
//
// Usage: cuda_soak [CANDIDATES]   (default 5000)
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cuda_capture.hpp"
#include "driver.hpp"
#include "r3/replay/backend.hpp"

namespace {

using namespace r3;
using Clock = std::chrono::steady_clock;

const char* kStencil = R"(
#ifndef SCALE
#define SCALE 1.0f
#endif
__device__ float r3_soak_scratch[64];  // a module variable: each module has its own
__global__ void stencil2d(const float* in, float* out, int n, float alpha) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= n - 1 || y >= n - 1) return;
  int i = y * n + x;
  out[i] = SCALE * (in[i] + alpha * (in[i - n] + in[i + n] + in[i - 1] + in[i + 1] - 4.0f * in[i]));
}
)";

double device_used_mib() {
  std::size_t free = 0, total = 0;
  replay::cuda::driver().cuMemGetInfo(&free, &total);
  return double(total - free) / (1 << 20);
}

double host_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string word;
  while (status >> word) {
    if (word == "VmRSS:") {
      double kib = 0;
      status >> kib;
      return kib / 1024;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int candidates = argc > 1 ? std::atoi(argv[1]) : 5000;
  const int n = 512;
  test::CudaLaunchSpec spec;
  spec.source = kStencil;
  spec.entry = "stencil2d";
  spec.grid = {n / 16, n / 16, 1};
  spec.block = {16, 16, 1};
  std::vector<float> in(std::size_t(n) * n), out(std::size_t(n) * n, 0.0f);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = std::sin(0.001f * float(i % 100000));
  spec.buffers.push_back({"in", test::bytes_of(in), capture::ElementType::f32, {}});
  spec.buffers.push_back({"out", test::bytes_of(out), capture::ElementType::f32, {}});
  spec.args = {test::pointer_arg(0), test::pointer_arg(1), test::value_arg(n), test::value_arg(0.1f)};
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("r3-cuda-soak-" + std::to_string(getpid()) + ".h5");
  test::record_cuda_launch(path, spec);
  auto capture = capture::CaptureReader::open(path);
  auto backend = replay::make_backend("cuda");
  backend->prepare(capture, 0, {});
  std::printf("device %s, %d candidates, each compiled anew by NVRTC\n",
              replay::cuda::Device::instance().name().c_str(), candidates);
  std::printf("%10s %16s %14s %10s %12s\n", "candidates", "device used MiB", "host RSS MiB",
              "verified", "per second");
  const auto start = Clock::now();
  int ok = 0;
  double first_device = 0, first_rss = 0;
  for (int i = 1; i <= candidates; ++i) {
    replay::Variant variant;
    variant.source_name = "stencil.cu";
    variant.source_text = kStencil;
    variant.entry = "stencil2d";
    variant.compiler = config::Compiler::nvrtc;
    variant.defines["SCALE"] = "(1.0f + 0.0f * " + std::to_string(i) + ")";
    replay::RunOptions options;
    options.warmup = 1;
    options.repeats = 3;
    replay::RunResult result = backend->run(backend->compile(variant), options);
    ok += result.outcome == replay::Outcome::ok ? 1 : 0;
    if (i == 100 || i == 1000 || i == candidates) {
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      const double device = device_used_mib(), rss = host_rss_mib();
      if (i == 100) first_device = device, first_rss = rss;
      std::printf("%10d %16.1f %14.1f %10d %12.1f\n", i, device, rss, ok, i / seconds);
      std::fflush(stdout);
    }
  }
  std::printf("growth from candidate 100 to %d: device %+.1f MiB, host RSS %+.1f MiB\n", candidates,
              device_used_mib() - first_device, host_rss_mib() - first_rss);
  std::filesystem::remove(path);
  return ok == candidates ? 0 : 1;
}
