// replay_throughput: what one GPU evaluates with the CUDA backend (DESIGN.md §9), measured in one
// run. For each size, a 2D stencil launch whose two regions (in, out) have that many MiB each is
// recorded on the GPU, then replayed as the tuning job does:
//   - launch-only variants (the recorded code with a new block shape; compiled once),
//   - recompiled variants, by NVRTC and by Clang/NVPTX, each with a different define so that
//     none comes from the cache: compiled on the evaluating thread, and compiled ahead by a
//     CompilePool of 1 and of 8 threads while the evaluating thread runs the earlier ones (as an
//     evaluator does with the candidates it holds), the threads compiling in this process and
//     then in compile worker processes (r3-sandbox --compile-worker, as evaluators do for NVRTC;
//     Clang compiles in the threads either way), and the compiles alone (no runs) likewise;
//     each pool warmed up first (its workers started, NVRTC loaded), as in a tuning job,
// each with 2 warm-up and 10 timed runs. It prints evaluations per second for each kind with the
// split of their time (compile+load or the wait for it, restore, run, verify), the restore
// bandwidth as a fraction of a plain device-to-device copy of the same bytes, and the kernel time
// measured while 8 threads compile over the kernel time measured alone.
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
#include "r3/replay/compile_pool.hpp"
#include "r3/replay/sandbox.hpp"

namespace {

using namespace r3;
using Clock = std::chrono::steady_clock;

const char* const kStencil = test::kBenchStencil;

struct Split {
  int evaluations = 0, ok = 0;
  double wall = 0, compile = 0, restore = 0, run = 0, verify = 0;
  void print(const std::string& what, const char* compile_is = "compile+load") const {
    std::printf(
        "%-40s %6.1f evaluations/s (%d of %d verified)  per evaluation: %s "
        "%.2f ms, restore %.2f ms, run %.2f ms, verify %.2f ms, other %.2f ms\n",
        what.c_str(), evaluations / wall, ok, evaluations, compile_is, 1e3 * compile / evaluations,
        1e3 * restore / evaluations, 1e3 * run / evaluations, 1e3 * verify / evaluations,
        1e3 * (wall - compile - restore - run - verify) / evaluations);
  }
};

// Returns the wall time of the run (restore, launches, verification). `compile` gives the
// variant's code (the backend's compile(), or a pool's get()).
template <class Compile>
double evaluate(replay::Backend& backend, const replay::Variant& variant, Split& split,
                Compile&& compile) {
  auto start = Clock::now();
  replay::Compiled compiled = compile(variant);
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

double evaluate(replay::Backend& backend, const replay::Variant& variant, Split& split) {
  return evaluate(backend, variant, split,
                  [&](const replay::Variant& v) { return backend.compile(v); });
}

// `count` stencil variants for `compiler` that verify (SCALE stays 1) but each compile anew: the
// spelling of SCALE differs by `tag` and index.
std::vector<replay::Variant> fresh_variants(replay::Compiler compiler, const std::string& tag,
                                            int count) {
  std::vector<replay::Variant> variants;
  for (int i = 0; i < count; ++i) {
    replay::Variant variant;
    variant.source_name = "stencil.cu";
    variant.source_text = kStencil;
    variant.entry = "stencil2d";
    variant.compiler = compiler;
    if (compiler == replay::Compiler::clang) variant.passes = "default<O3>";
    variant.defines["SCALE"] = "(1.0f + 0.0f * " + std::to_string(i) + " * " + tag + ")";
    variants.push_back(std::move(variant));
  }
  return variants;
}

// Brings a pool to the state it has in a tuning job, where it lives as long as the evaluator:
// its worker processes started and each past its first compile (NVRTC's own start-up). Two
// variants per thread, new to every cache and none of them measured, so that a thread whose
// worker started late still gets one.
void warm_up(replay::CompilePool& pool) {
  static int round = 0;
  const auto variants = fresh_variants(replay::Compiler::nvrtc, "-" + std::to_string(++round),
                                       2 * int(pool.threads()));
  for (const replay::Variant& v : variants) pool.submit(v);
  for (const replay::Variant& v : variants) pool.get(v);
}

// Evaluates the variants one after the other while a pool of `threads` compiles them ahead (in
// worker processes when `workers` names the program), from a pool warmed up (warm_up).
Split pooled(replay::Backend& backend, const std::vector<replay::Variant>& variants,
             unsigned threads, const std::filesystem::path& workers = {}) {
  Split split;
  replay::CompilePool pool(backend, threads, workers);
  warm_up(pool);
  const auto start = Clock::now();
  for (const replay::Variant& variant : variants) pool.submit(variant);
  for (const replay::Variant& variant : variants)
    evaluate(backend, variant, split, [&](const replay::Variant& v) { return pool.get(v); });
  split.wall = std::chrono::duration<double>(Clock::now() - start).count();
  return split;
}

replay::Variant recorded_variant() {
  replay::Variant variant;
  variant.compiler = replay::Compiler::recorded;
  return variant;
}

// The median over `rounds` of the recorded kernel's median time.
double kernel_median(replay::Backend& backend, const replay::Compiled& compiled, int rounds) {
  std::vector<double> medians;
  for (int i = 0; i < rounds; ++i)
    medians.push_back(backend.run(compiled, {}).launches.at(0).time.median);
  std::sort(medians.begin(), medians.end());
  return medians[medians.size() / 2];
}

int measure(int mib) {
  // n x n floats of mib MiB, n a multiple of 16.
  const int n = static_cast<int>(std::sqrt(double(mib) * (1 << 20) / 4)) / 16 * 16;
  test::CudaLaunchSpec spec = test::stencil_launch(n);
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
    recorded.compiler = replay::Compiler::recorded;
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
    for (const replay::Variant& variant : fresh_variants(replay::Compiler::nvrtc, "1", 16))
      evaluate(*backend, variant, recompiled);
    if (R3_HAVE_LLVM) {
      for (const replay::Variant& variant : fresh_variants(replay::Compiler::clang, "1", 16))
        evaluate(*backend, variant, clang);
    }
    launch_only.print("launch-only variants");
    recompiled.print("recompiled (NVRTC), compiled in turn");
    if (clang.evaluations > 0) clang.print("recompiled (Clang), compiled in turn");
    std::vector<std::pair<replay::Compiler, const char*>> compilers = {
        {replay::Compiler::nvrtc, "NVRTC"}};
    if (R3_HAVE_LLVM) compilers.push_back({replay::Compiler::clang, "Clang"});
    const std::filesystem::path worker_program = replay::find_sandbox_helper();
    int salt = 2;
    for (std::size_t c = 0; c < compilers.size(); ++c) {
      for (const bool processes : {false, true}) {
        double per_pool[2] = {};  // evaluations/s with 1 and 8
        int column = 0;
        const std::string unit = processes ? "compile worker" : "compile thread";
        for (unsigned threads : {1u, 8u}) {
          const int count = compilers[c].first == replay::Compiler::clang ? 24 : 96;
          Split split = pooled(*backend,
                               fresh_variants(compilers[c].first, std::to_string(salt++), count),
                               threads, processes ? worker_program : std::filesystem::path());
          split.print(std::string("recompiled (") + compilers[c].second + "), " +
                          std::to_string(threads) + " " + unit + (threads > 1 ? "s" : ""),
                      "wait for compile");
          per_pool[column++] = split.evaluations / split.wall;
        }
        std::printf("  %s: 8 %ss over 1: %.2f evaluations/s ratio\n", compilers[c].second,
                    unit.c_str(), per_pool[1] / per_pool[0]);
        // The compiles alone, without the runs that bound the evaluations above.
        double rate[2] = {};
        for (int k = 0; k < 2; ++k) {
          const unsigned threads = k == 0 ? 1 : 8;
          const auto variants =
              fresh_variants(compilers[c].first, std::to_string(salt++), threads == 1 ? 32 : 128);
          replay::CompilePool pool(*backend, threads,
                                   processes ? worker_program : std::filesystem::path());
          warm_up(pool);
          const auto start = Clock::now();
          for (const replay::Variant& v : variants) pool.submit(v);
          for (const replay::Variant& v : variants) pool.get(v);
          rate[k] = variants.size() / std::chrono::duration<double>(Clock::now() - start).count();
        }
        std::printf("  %s compiles alone: %.1f/s with 1 %s, %.1f/s with 8: %.2f ratio\n",
                    compilers[c].second, rate[0], unit.c_str(), rate[1], rate[1] / rate[0]);
      }
    }

    // Does compiling on 8 threads disturb the kernel's timing?
    const replay::Compiled original = backend->compile(recorded_variant());
    const double alone = kernel_median(*backend, original, 9);
    double busy = 0;
    {
      replay::CompilePool pool(*backend, 8);
      const replay::Compiler compiler =
          R3_HAVE_LLVM ? replay::Compiler::clang : replay::Compiler::nvrtc;
      for (const replay::Variant& variant : fresh_variants(compiler, "11", 32))
        pool.submit(variant);
      busy = kernel_median(*backend, original, 9);
    }
    std::printf("kernel median while 8 threads compile over alone: %.3f (%.2f us / %.2f us)\n",
                busy / alone, busy * 1e6, alone * 1e6);

    // Restore bandwidth: the backend restores `out` (64 MiB) by device-to-device copy.
    replay::RunResult timed = backend->run(backend->compile(recorded_variant()), {});
    const double restore = timed.launches.at(0).restore_seconds;
    const auto& d = replay::cuda::driver();
    const std::size_t bytes = std::size_t(n) * n * sizeof(float);  // `out`
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
  // The compile workers' helper lives in the build's bin/, not beside this program in bench/,
  // where the sandbox looks first.
  setenv("R3_SANDBOX", R3_BENCH_SANDBOX, /*overwrite=*/0);
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
