#include "r3/record/apply_command.hpp"

#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <ostream>

#include "../kokkos/tuned_values.hpp"
#include "r3/elapsed.hpp"
#include "r3/error.hpp"
#include "r3/files.hpp"
#include "r3/record/application.hpp"

namespace r3::record {

namespace fs = std::filesystem;

namespace {

// A directory of our own under TMPDIR, removed with its files at the end of the scope.
class PrivateDirectory {
 public:
  PrivateDirectory() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/r3-apply-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      throw IoError("mkdtemp", "r3 apply: cannot create a directory like " + pattern);
    path_ = pattern;
  }
  ~PrivateDirectory() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  PrivateDirectory(const PrivateDirectory&) = delete;
  PrivateDirectory& operator=(const PrivateDirectory&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs the application and says for how long (its own run, without r3 apply's preparations)
// and, when it failed, its exit status, which it returns.
int run_timed(const std::vector<std::string>& command, const ApplicationEnvironment& env,
              std::ostream& report) {
  report.flush();
  const auto start = std::chrono::steady_clock::now();
  const int status = run_application("r3 apply", command, env);
  char seconds[64];
  std::snprintf(seconds, sizeof seconds, "%.3f", seconds_since(start));
  report << "r3 apply: the application ran for " << seconds << " s\n";
  if (status != 0) report << "r3 apply: the application exited with status " << status << "\n";
  return status;
}

int apply_cuda(const ApplyOptions& options, const CudaWinners& winners, std::ostream& report) {
  ApplicationEnvironment env;
  env.dropped_prefixes.push_back("R3_APPLY_");
  if (winners.manifest.kernels.empty()) {
    report << "r3 apply: no kernel to substitute: the application runs as it is\n";
    report.flush();
    return run_application("r3 apply", options.command, env);
  }
  const std::optional<fs::path> library = find_cuda_apply_library();
  if (!library)
    throw NotAvailableError("r3 apply: this r3 was built without CUDA (no " +
                            std::string(kCudaApplyFile) + ")");
  PrivateDirectory dir;
  for (std::size_t i = 0; i < winners.manifest.kernels.size(); ++i)
    write_file(dir.path() / winners.manifest.kernels[i].code, winners.cubins.at(i));
  const fs::path manifest = dir.path() / "manifest";
  write_file(manifest, cuda::to_text(winners.manifest));
  env.set.push_back("CUDA_INJECTION64_PATH=" + library->string());
  env.set.push_back("R3_APPLY_MANIFEST=" + manifest.string());
  if (options.original) env.set.push_back("R3_APPLY_SUBSTITUTE=0");
  if (options.check) env.set.push_back("R3_APPLY_CHECK=1");
  return run_timed(options.command, env, report);
}

}  // namespace

int apply_to_application(const ApplyOptions& options, std::ostream& report) {
  if (options.command.empty()) throw UsageError("r3 apply: give the application to run after --");
  if (options.cuda) return apply_cuda(options, *options.cuda, report);
  if (options.check)
    throw UsageError(
        "r3 apply --check: for a CUDA application's result (this is Kokkos tuned values)");
  std::error_code ec;
  if (!fs::exists(options.result, ec))
    throw ConfigError("r3 apply: " + options.result.string() +
                      ": no such file or directory (give a run's best.yaml or results directory)");
  const fs::path result = fs::absolute(options.result);
  // Refuse a result the connector could not use before the application starts, not after.
  kokkos::TunedValues tuned;
  try {
    tuned = kokkos::TunedValues::load(result);
  } catch (const kokkos::TunedValuesError& e) {
    throw ConfigError(std::string("r3 apply: ") + e.what());
  }
  report << "r3 apply: tuned values of " << tuned.kernels().size() << " kernel(s) from "
         << result.string() << ":\n";
  for (const auto& k : tuned.kernels()) {
    report << "  " << k.label << ":";
    for (const auto& [name, value] : k.values) report << " " << name << "=" << value;
    if (k.values.empty()) report << " (no launch or source parameters: nothing to apply)";
    report << "\n";
  }

  ApplicationEnvironment env;
  const fs::path connector = find_kokkos_library(kConnectorFile);
  env.set = kokkos_tool_variables(connector);
  if (options.kokkos_without_tuning)
    env.prepended_paths.push_back("LD_PRELOAD=" + find_kokkos_library(kCompatFile).string());
  if (options.original) {
    // The same application with the connector loaded and no result: the baseline.
    report << "r3 apply --original: the connector is loaded without the result\n";
    return run_timed(options.command, env, report);
  }
  env.set.push_back("R3_KOKKOS_TUNED=" + result.string());
  std::optional<PrivateDirectory> dir;
  if (!options.kokkos_team_limits.empty()) {
    dir.emplace();
    const fs::path limits = dir->path() / "team_limits.yaml";
    write_file(limits, kokkos::team_limits_text(options.kokkos_team_limits));
    env.set.push_back("R3_KOKKOS_TEAM_LIMITS=" + limits.string());
  }
  return run_timed(options.command, env, report);
}

}  // namespace r3::record
