// replay_throughput: what one GPU evaluates with the CUDA backend (DESIGN.md §9), measured in one
// run. For each size, a 2D stencil launch whose two regions (in, out) have that many MiB each is
// recorded on the GPU, then replayed as the tuning job does:
//   - launch-only variants (the recorded code with a new block shape; compiled once),
//   - recompiled variants, by NVRTC and by Clang/NVPTX, each with a different define so that
//     none comes from the cache (compiled on the evaluating thread: there is no compile thread
//     pool yet),
// each with 2 warm-up and 10 timed runs. It prints evaluations per second for each kind with the
// split of their time (compile+load, restore, run, verify), and the restore bandwidth as a
// fraction of a plain device-to-device copy of the same bytes.
//
// Usage: replay_throughput [MIB...]   (default: 16 1024)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cuda_capture.hpp"
#include "driver.hpp"
#include "r3/config.hpp"
#include "r3/replay/backend.hpp"

namespace {

using namespace r3;
using Clock = std::chrono::steady_clock;

const char* kStencil = R"(
#ifndef SCALE
#define SCALE 1.0f
#endif
__global__ void stencil2d(const float* in, float* out, int n, float alpha) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= n - 1 || y >= n - 1) return;
  int i = y * n + x;
  out[i] = SCALE * (in[i] + alpha * (in[i - n] + in[i + n] + in[i - 1] + in[i + 1] - 4.0f * in[i]));
}
)";

struct Split {
  int evaluations = 0, ok = 0;
  double wall = 0, compile = 0, restore = 0, run = 0, verify = 0;
  void print(const char* what) const {
    std::printf(
        "%-22s %5.1f evaluations/s (%d of %d verified)  per evaluation: compile+load "
        "%.2f ms, restore %.2f ms, run %.2f ms, verify %.2f ms, other %.2f ms\n",
        what, evaluations / wall, ok, evaluations, 1e3 * compile / evaluations,
        1e3 * restore / evaluations, 1e3 * run / evaluations, 1e3 * verify / evaluations,
        1e3 * (wall - compile - restore - run - verify) / evaluations);
  }
};

// Returns the wall time of the run (restore, launches, verification).
double evaluate(replay::Backend& backend, const replay::Variant& variant, Split& split) {
  auto start = Clock::now();
  replay::Compiled compiled = backend.compile(variant);
  split.compile += std::chrono::duration<double>(Clock::now() - start).count();
  replay::RunOptions options;  // 2 warm-up, 10 timed runs
  auto run_start = Clock::now();
  replay::RunResult result = backend.run(compiled, options);
  const double run_wall = std::chrono::duration<double>(Clock::now() - run_start).count();
  for (const replay::LaunchResult& launch : result.launches) {
    const double runs = options.warmup + options.repeats + 1;  // + the verified run
    split.restore += launch.restore_seconds * runs;
    for (double t : launch.time.samples) split.run += t;
    split.run += launch.time.median * (options.warmup + 1);
    split.verify += launch.verify_seconds * (options.verify_after_timing ? 2 : 1);
  }
  split.wall += std::chrono::duration<double>(Clock::now() - start).count();
  ++split.evaluations;
  split.ok += result.outcome == replay::Outcome::ok ? 1 : 0;
  return run_wall;
}

int measure(int mib) {
  // n x n floats of mib MiB, n a multiple of 16.
  const int n = static_cast<int>(std::sqrt(double(mib) * (1 << 20) / 4)) / 16 * 16;
  test::CudaLaunchSpec spec;
  spec.source = kStencil;
  spec.entry = "stencil2d";
  spec.grid = {static_cast<std::uint32_t>(n / 16), static_cast<std::uint32_t>(n / 16), 1};
  spec.block = {16, 16, 1};
  std::vector<float> in(std::size_t(n) * n), out(std::size_t(n) * n, 0.0f);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = std::sin(0.001f * float(i % 100000));
  spec.buffers.push_back({"in", test::bytes_of(in), capture::ElementType::f32, {}});
  spec.buffers.push_back({"out", test::bytes_of(out), capture::ElementType::f32, {}});
  spec.args = {test::pointer_arg(0), test::pointer_arg(1), test::value_arg(n),
               test::value_arg(0.1f)};
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("r3-replay-throughput-" + std::to_string(getpid()) + ".h5");
  test::record_cuda_launch(path, spec);
  {
    auto capture = capture::CaptureReader::open(path);
    auto backend = replay::make_backend("cuda");
    backend->prepare(capture, 0, {});
    std::printf("device %s, stencil %dx%d (2 x %.0f MiB), memory %s\n",
                replay::cuda::Device::instance().name().c_str(), n, n,
                double(n) * n * 4 / (1 << 20), backend->placement().c_str());

    Split launch_only, recompiled, clang;
    const capture::Dim3 shapes[] = {{16, 16, 1}, {32, 8, 1},  {64, 4, 1}, {128, 2, 1},
                                    {256, 1, 1}, {32, 16, 1}, {64, 8, 1}, {32, 32, 1}};
    replay::Variant recorded;
    recorded.compiler = config::Compiler::recorded;
    // Once before measuring: the first verification compiles the comparison kernels (NVRTC,
    // once per process).
    auto setup_start = Clock::now();
    backend->run(backend->compile(recorded), {});
    std::printf("one-time set-up (comparison kernels, first module): %.0f ms\n",
                1e3 * std::chrono::duration<double>(Clock::now() - setup_start).count());
    for (int round = 0; round < 4; ++round) {
      for (const capture::Dim3& shape : shapes) {
        recorded.block = shape;
        const double wall = evaluate(*backend, recorded, launch_only);
        if (round == 0)
          std::printf("  block %ux%ux%u: run() %.2f ms\n", shape.x, shape.y, shape.z, 1e3 * wall);
      }
    }
    for (int i = 0; i < 16; ++i) {
      replay::Variant variant;
      variant.source_name = "stencil.cu";
      variant.source_text = kStencil;
      variant.entry = "stencil2d";
      variant.compiler = config::Compiler::nvrtc;
      // SCALE stays 1 (verified) but each spelling is a new compile.
      variant.defines["SCALE"] = "(1.0f + 0.0f * " + std::to_string(i) + ")";
      evaluate(*backend, variant, recompiled);
      if (R3_HAVE_LLVM) {
        variant.compiler = config::Compiler::clang;
        variant.passes = "default<O3>";
        evaluate(*backend, variant, clang);
      }
    }
    launch_only.print("launch-only variants");
    recompiled.print("recompiled (NVRTC)");
    if (clang.evaluations > 0) clang.print("recompiled (Clang)");

    // Restore bandwidth: the backend restores `out` (64 MiB) by device-to-device copy.
    replay::RunResult timed =
        backend->run(backend->compile(replay::Variant{.compiler = config::Compiler::recorded}), {});
    const double restore = timed.launches.at(0).restore_seconds;
    const auto& d = replay::cuda::driver();
    const std::size_t bytes = out.size() * sizeof(float);
    CUdeviceptr a = 0, b = 0;
    R3_CU(d.cuMemAlloc(&a, bytes));
    R3_CU(d.cuMemAlloc(&b, bytes));
    CUevent start, stop;
    R3_CU(d.cuEventCreate(&start, 0));
    R3_CU(d.cuEventCreate(&stop, 0));
    std::vector<float> copies;
    for (int i = 0; i < 12; ++i) {
      R3_CU(d.cuEventRecord(start, nullptr));
      R3_CU(d.cuMemcpyDtoDAsync(b, a, bytes, nullptr));
      R3_CU(d.cuEventRecord(stop, nullptr));
      R3_CU(d.cuEventSynchronize(stop));
      float ms = 0;
      R3_CU(d.cuEventElapsedTime(&ms, start, stop));
      if (i >= 2) copies.push_back(ms * 1e-3f);
    }
    std::sort(copies.begin(), copies.end());
    const double copy = copies[copies.size() / 2];
    std::printf(
        "restore of %.0f MiB: %.1f us per run, a plain device-to-device copy %.1f us: "
        "restore bandwidth %.2f of a plain copy (%.0f GB/s)\n",
        bytes / double(1 << 20), restore * 1e6, copy * 1e6, copy / restore, bytes / restore / 1e9);
    std::printf(
        "kernel median %.1f us; launch-only evaluations/s over recompiled: %.2f\n",
        timed.launches.at(0).time.median * 1e6,
        (launch_only.evaluations / launch_only.wall) / (recompiled.evaluations / recompiled.wall));
  }
  std::filesystem::remove(path);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (std::string why = replay::cuda::why_unavailable(); !why.empty()) {
    std::fprintf(stderr, "replay_throughput: %s\n", why.c_str());
    return 2;
  }
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {16, 1024};
  for (int mib : sizes) {
    if (int status = measure(mib); status != 0) return status;
  }
  return 0;
}
