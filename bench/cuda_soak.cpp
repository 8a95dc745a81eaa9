// cuda_soak: the CUDA backend over thousands of candidates, each compiled anew (NVRTC, a define
// that differs), run, verified and timed as an evaluator does. Device memory in use (cuMemGetInfo)
// and host RSS are printed after 100, 1000 and the last candidate: both must stay flat, since the
// backend keeps only its most recently used modules and compiled variants and owns every CUDA
// handle (modules, stream, events, buffers) with RAII. The kernel is the benchmarks' stencil
// (bench/support).
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

// Each candidate's module has a variable of its own, which the backend resets before every run.
const std::string kStencil = std::string(test::kBenchStencil) + "__device__ float r3_soak_scratch[64];\n";

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
  const int n = 512;  // 1 MiB per buffer
  test::CudaLaunchSpec spec = test::stencil_launch(n);
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
    variant.compiler = replay::Compiler::nvrtc;
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
