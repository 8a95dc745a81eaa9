// fidelity: how well a replay times a kernel compared with its time inside the application
// (DESIGN.md §9). For every recorded launch of every kernel it replays the recorded code with the
// CUDA backend (5 warm-up and 51 timed runs, prologue restored between them) and prints the
// replay's median over the launch's time in the application, which the CUDA recorder takes
// from CUPTI kernel activity records: the median of the application's launches of that kernel
// with the same shape. The summary counts the launches longer than 50 us that lie within ±10%.
//
// Usage: fidelity [CAPTURE...]
// Without captures it first records the CUDA examples (cuda_heat, cuda_cg, cuda_fields) at sizes
// where their main kernels run longer than 50 us, with the r3 it was built with.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "r3/capture.hpp"
#include "r3/replay/backend.hpp"

namespace {

namespace fs = std::filesystem;
using namespace r3;

struct Recording {
  std::string name, kernels, application;
};

std::vector<std::string> record_examples(const fs::path& dir) {
  const std::vector<Recording> recordings = {
      {"heat", "heat_", std::string(R3_BENCH_CUDA_HEAT) + " 4096 200"},
      {"cg", "csr_spmv|dot_partial|axpy|xpby", std::string(R3_BENCH_CUDA_CG) + " 2048 100"},
      {"fields", "compute_flux|mix_species|decay",
       std::string(R3_BENCH_CUDA_FIELDS) + " 16777216 50"},
  };
  std::vector<std::string> captures;
  for (const Recording& r : recordings) {
    const fs::path capture = dir / (r.name + ".h5");
    const std::string command = std::string(R3_BENCH_R3) + " record --launches 2 -k '" + r.kernels +
                                "' -o " + capture.string() + " -- " + r.application +
                                " > /dev/null";
    std::printf("recording: %s\n", command.c_str());
    std::fflush(stdout);
    if (std::system(command.c_str()) != 0 || !fs::exists(capture)) {
      std::fprintf(stderr, "fidelity: recording %s failed\n", r.name.c_str());
      std::exit(1);
    }
    captures.push_back(capture.string());
  }
  return captures;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> captures(argv + 1, argv + argc);
  fs::path dir;
  if (captures.empty()) {
    dir = fs::temp_directory_path() / ("r3-fidelity-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    captures = record_examples(dir);
  }
  std::unique_ptr<replay::Backend> backend = replay::make_backend("cuda");
  replay::RunOptions options;
  options.warmup = 5;
  options.repeats = 51;
  options.verify_after_timing = false;

  int long_launches = 0, long_within = 0, unverified = 0;
  double worst = 0;
  std::printf("\n%-10s %-28s %6s %14s %12s %8s\n", "capture", "kernel", "launch", "app (us)",
              "replay (us)", "ratio");
  for (const std::string& path : captures) {
    auto reader = capture::CaptureReader::open(path);
    for (std::size_t k = 0; k < reader.kernels().size(); ++k) {
      const capture::Kernel& kernel = reader.kernels()[k];
      const std::string name =
          kernel.demangled_name.empty()
              ? kernel.name
              : kernel.demangled_name.substr(0, kernel.demangled_name.find('('));
      backend->prepare(reader, k, {});
      replay::Variant variant;
      variant.compiler = replay::Compiler::recorded;
      replay::Compiled compiled = backend->compile(variant);
      if (!compiled.ok) {
        std::printf("%-10s %-28s   does not load: %s\n", fs::path(path).stem().c_str(),
                    name.c_str(), compiled.diagnostics.c_str());
        continue;
      }
      replay::RunResult result = backend->run(compiled, options);
      for (const replay::LaunchResult& launch : result.launches) {
        const auto& recorded = kernel.launches.at(launch.launch);
        const double replayed_us = launch.time.median * 1e6;
        if (!launch.verified) ++unverified;
        if (!recorded.app_time_us) {
          std::printf("%-10s %-28s %6zu %14s %12.1f\n", fs::path(path).stem().c_str(), name.c_str(),
                      launch.launch, "-", replayed_us);
          continue;
        }
        const double ratio = replayed_us / *recorded.app_time_us;
        std::printf("%-10s %-28s %6zu %14.1f %12.1f %8.3f%s\n", fs::path(path).stem().c_str(),
                    name.c_str(), launch.launch, *recorded.app_time_us, replayed_us, ratio,
                    launch.verified ? "" : "  NOT VERIFIED");
        if (*recorded.app_time_us >= 50.0) {
          ++long_launches;
          if (std::abs(ratio - 1.0) <= 0.10) ++long_within;
          worst = std::max(worst, std::abs(ratio - 1.0));
        }
      }
    }
  }
  std::printf(
      "\nlaunches longer than 50 us in the application: %d of %d replay within ±10%% (largest "
      "deviation %.1f%%); %d launch(es) not verified\n",
      long_within, long_launches, 100.0 * worst, unverified);
  if (!dir.empty()) fs::remove_all(dir);
  return unverified == 0 ? 0 : 1;
}
