// bench/host_replay: what replaying costs on the host backend, for the demo stencil at several
// grid sizes. For each size it records the demo application (r3 record), then replays its
// launches in this process and prints, measured in this one run:
//   - the kernel's median time, the restore time per timed run, one verification;
//   - restore / kernel and (restore + verify) / kernel: the overhead of a replayed run;
//   - the wall time of one run as the backend does it (each run is a process of its own: fork,
//     restore, the kernel, stop, reap; verification of the timed ones), over the kernel's time;
//   - that wall time again confined as the sandbox child does it: filtered, then also in a PID
//     namespace of its own;
//   - the time to compile one variant (Clang front end + passes + JIT), at O2 and at O3.
// Usage: host_replay [GRID...]   (default: 512 8192, i.e. 1 MiB and 256 MiB per buffer)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "r3/capture.hpp"
#include "r3/inspect.hpp"
#include "r3/replay/backend.hpp"

namespace {

namespace fs = std::filesystem;

int record(int grid, const fs::path& capture) {
  std::string command = std::string(R3_BENCH_R3) + " record -k stencil2d --launches 1 -o " +
                        capture.string() + " -- " + R3_BENCH_STENCIL + " " + std::to_string(grid) +
                        " 1 > /dev/null 2>&1";
  return std::system(command.c_str());
}

double compile_seconds(r3::replay::Backend& backend, const std::string& passes) {
  r3::replay::Variant variant;
  variant.passes = passes;
  variant.defines["R3_BENCH_UNIQUE"] = passes;  // a new key: never from the cache
  r3::replay::Compiled compiled = backend.compile(variant);
  if (!compiled.ok) {
    std::fprintf(stderr, "compile failed:\n%s\n", compiled.diagnostics.c_str());
    std::exit(1);
  }
  return compiled.seconds;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> grids;
  for (int i = 1; i < argc; ++i) grids.push_back(std::atoi(argv[i]));
  if (grids.empty()) grids = {512, 8192};
  fs::path dir = fs::temp_directory_path() / ("r3-bench-host-replay-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::printf("host replay of the demo stencil (examples/demo), 20 timed runs per launch\n");
  std::printf("%6s %10s %12s %12s %12s %10s %12s %12s %10s %12s %12s %10s %10s\n", "grid",
              "buffer", "kernel", "restore/run", "verify", "restore/k", "(r+v)/k", "wall/run",
              "wall/k", "filtered", "+pid ns", "compile O2", "compile O3");
  for (int grid : grids) {
    fs::path capture = dir / ("stencil-" + std::to_string(grid) + ".h5");
    if (record(grid, capture) != 0) {
      std::fprintf(stderr, "recording the stencil on a %d x %d grid failed\n", grid, grid);
      return 1;
    }
    auto reader = r3::capture::CaptureReader::open(capture);
    auto backend = r3::replay::make_backend("host");
    backend->prepare(reader, 0, {});
    r3::replay::RunOptions options;
    options.warmup = 3;
    options.repeats = 20;
    r3::replay::Compiled original = backend->compile({});
    const auto start = std::chrono::steady_clock::now();
    r3::replay::RunResult result = backend->run(original, options);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (result.outcome != r3::replay::Outcome::ok) {
      std::fprintf(stderr, "replay failed: %s\n", result.message.c_str());
      return 1;
    }
    const r3::replay::LaunchResult& launch = result.launches.at(0);
    double kernel = launch.time.median;
    // The one launch's verified run, warm-ups and timed runs.
    const double wall_per_run = wall / (1.0 + options.warmup + options.repeats);
    // The same run as a confined sandbox child makes it: the allow-list filter and limits, then
    // also a PID namespace per candidate process.
    auto confined_wall_per_run = [&](bool pid_namespace) {
      r3::replay::CandidateLimits limits;
      limits.confine = true;
      limits.pid_namespace = pid_namespace;
      backend->set_candidate_limits(limits);
      const auto at = std::chrono::steady_clock::now();
      r3::replay::RunResult confined = backend->run(original, options);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - at).count();
      backend->set_candidate_limits({});
      return confined.outcome == r3::replay::Outcome::ok
                 ? seconds / (1.0 + options.warmup + options.repeats)
                 : -1.0;
    };
    const double filtered_per_run = confined_wall_per_run(false);
    const double namespaced_per_run = confined_wall_per_run(true);
    double o2 = compile_seconds(*backend, "default<O2>");
    double o3 = compile_seconds(*backend, "default<O3>");
    std::printf("%6d %10s %9.1f us %9.1f us %9.1f us %10.3f %12.3f %9.1f us %10.2f %9.1f us %9.1f us %8.3f s %8.3f s\n",
                grid, r3::format_bytes(std::uint64_t(grid) * grid * sizeof(float)).c_str(),
                kernel * 1e6, launch.restore_seconds * 1e6, launch.verify_seconds * 1e6,
                launch.restore_seconds / kernel,
                (launch.restore_seconds + launch.verify_seconds) / kernel, wall_per_run * 1e6,
                wall_per_run / kernel, filtered_per_run * 1e6, namespaced_per_run * 1e6, o2, o3);
    fs::remove(capture);
  }
  fs::remove_all(dir);
  std::printf(
      "restore/k: restore time per timed run over the kernel's median time; (r+v)/k: that\n"
      "plus one verification of every region, over the kernel's median time; wall/run: one run\n"
      "as the backend does it (a process of its own), wall/k: that over the kernel's time;\n"
      "filtered: wall/run with the candidate's system-call filter and limits, +pid ns: that in\n"
      "a PID namespace of its own (as a confined sandbox child runs it; -1 where it failed).\n");
  return 0;
}
