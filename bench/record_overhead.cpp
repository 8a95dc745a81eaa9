// record_overhead: how much slower a CUDA application runs under the CUDA recorder when no
// kernel is selected (DESIGN.md §9): every launch then costs one CUPTI callback. For each example
// it runs, interleaved ROUNDS times, the application alone, the application with the recorder
// injected (the environment `r3 record` sets, without starting r3), and `r3 record -k <nothing>
// -- application`, and prints the median wall times and their ratios to the plain run. The first
// row, a run of 3 launches, gives the fixed cost of loading the recorder (CUPTI and its
// libraries); the last column is the rest of the extra time per kernel launch.
//
// Then, with a multi-threaded application (examples/cuda/threads.cu: worker threads launch
// small kernels while one thread's launch over a large buffer is recorded), how long the
// workers' launch calls take while another thread's launch is recorded: the longest call shows a
// worker waiting for that recording (its copies and its write to the capture).
// `--before LIB` runs that part with another build of libr3record_cuda.so too (an older one, to
// compare).
//
// Usage: record_overhead [ROUNDS] [--threads-only] [--before LIB]   (ROUNDS default 7)
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "r3/report/analysis.hpp"

namespace {

namespace fs = std::filesystem;

double seconds_of(const std::string& command) {
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system((command + " > /dev/null 2>&1").c_str());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // `r3 record` exits with 1 when nothing was recorded, which is the point here.
  if (status != 0 && command.find(" record ") == std::string::npos) {
    std::fprintf(stderr, "record_overhead: '%s' failed (status %d)\n", command.c_str(), status);
    std::exit(1);
  }
  return seconds;
}

// The command's standard output (its last line).
std::string output_of(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen((command + " 2>/dev/null").c_str(), "r");
  if (!pipe) return out;
  std::array<char, 4096> line{};
  while (std::fgets(line.data(), line.size(), pipe)) out = line.data();
  ::pclose(pipe);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

struct Example {
  std::string name, application;
  long launches;  // kernel launches the application makes with these arguments
};

}  // namespace

// Worker threads' launch calls while one thread's launch is recorded, with each recorder.
void threaded(const fs::path& dir,
              const std::vector<std::pair<std::string, std::string>>& libraries, int rounds) {
  std::printf("\ncuda_threads: workers launch while one launch over 512 MiB is recorded\n");
  for (int threads : {2, 8}) {
    const std::string app =
        std::string(R3_BENCH_THREADED_LAUNCHER) + " " + std::to_string(threads) + " 512 2";
    for (int r = 0; r < rounds; ++r) {
      std::printf("  %-8s %s\n", "plain", output_of(app).c_str());
      for (const auto& [name, library] : libraries) {
        const fs::path capture = dir / "threaded.h5";
        fs::remove(capture);
        const std::string recorded = "CUDA_INJECTION64_PATH=" + library +
                                     " R3_RECORD_OUTPUT=" + capture.string() +
                                     " R3_RECORD_KERNELS=scale " + app;
        std::printf("  %-8s %s\n", name.c_str(), output_of(recorded).c_str());
      }
    }
  }
}

int main(int argc, char** argv) {
  int rounds = 7;
  bool threads_only = false;
  std::vector<std::pair<std::string, std::string>> libraries = {{"recorded", R3_BENCH_INJECTION}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads-only") {
      threads_only = true;
    } else if (arg == "--before" && i + 1 < argc) {
      libraries.insert(libraries.begin(), {"before", argv[++i]});
    } else {
      rounds = std::max(1, std::atoi(argv[i]));
    }
  }
  const fs::path dir = fs::temp_directory_path() / ("r3-overhead-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  if (threads_only) {
    threaded(dir, libraries, rounds);
    fs::remove_all(dir);
    return 0;
  }
  const std::string none = "'^no_kernel_is_selected$'";
  const std::string injected = std::string("CUDA_INJECTION64_PATH=") + R3_BENCH_INJECTION +
                               " R3_RECORD_OUTPUT=" + (dir / "injected.h5").string() +
                               " R3_RECORD_KERNELS=" + none + " ";
  const std::string recorded = std::string(R3_BENCH_R3) + " record -o " +
                               (dir / "recorded.h5").string() + " -k " + none + " -- ";
  // heat: 2 launches per step + 1; cg: 6 per iteration + 1 (dot products included).
  const std::vector<Example> examples = {
      {"cuda_heat 512 1 (fixed cost)", std::string(R3_BENCH_CUDA_HEAT) + " 512 1", 3},
      {"cuda_heat 4096 10000", std::string(R3_BENCH_CUDA_HEAT) + " 4096 10000", 20001},
      {"cuda_heat 512 20000", std::string(R3_BENCH_CUDA_HEAT) + " 512 20000", 40001},
      {"cuda_cg 2048 1000", std::string(R3_BENCH_CUDA_CG) + " 2048 1000", 6001},
      {"cuda_fields 16777216 300", std::string(R3_BENCH_CUDA_FIELDS) + " 16777216 300", 900},
  };
  std::printf("%-29s %10s %10s %10s %9s %9s %16s\n", "application", "plain (s)", "inject (s)",
              "record (s)", "inject/x", "record/x", "per launch (us)");
  double fixed = 0;  // extra seconds of a run that makes 3 launches
  for (const Example& e : examples) {
    seconds_of(e.application);  // warm the file cache and the driver
    std::vector<double> plain, inject, record;
    for (int r = 0; r < rounds; ++r) {
      plain.push_back(seconds_of(e.application));
      inject.push_back(seconds_of(injected + e.application));
      record.push_back(seconds_of(recorded + e.application));
    }
    const double p = r3::report::median(plain), i = r3::report::median(inject),
                 c = r3::report::median(record);
    if (&e == &examples.front()) {
      fixed = i - p;
      std::printf("%-29s %10.3f %10.3f %10.3f %9.3f %9.3f %16s\n", e.name.c_str(), p, i, c, i / p,
                  c / p, "-");
      continue;
    }
    std::printf("%-29s %10.3f %10.3f %10.3f %9.3f %9.3f %16.2f\n", e.name.c_str(), p, i, c, i / p,
                c / p, 1e6 * (i - p - fixed) / double(e.launches));
  }
  std::printf(
      "(medians of %d interleaved rounds; 'inject' is the application with the recorder "
      "loaded and nothing selected, 'record' adds starting r3)\n",
      rounds);
  threaded(dir, libraries, std::min(rounds, 3));
  fs::remove_all(dir);
  return 0;
}
