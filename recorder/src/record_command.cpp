#include "r3/record/record_command.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ostream>

#include "r3/capture.hpp"
#include "r3/error.hpp"
#include "r3/inspect.hpp"
#include "r3/log.hpp"
#include "r3/record/application.hpp"
#include "r3/record/call.hpp"
#include "session.hpp"

namespace r3::record {
namespace {

namespace fs = std::filesystem;

// The captures this run wrote: the output, or its per-rank siblings (name.rankN.ext).
std::vector<fs::path> written_since(const fs::path& output, fs::file_time_type start) {
  std::vector<fs::path> found;
  std::error_code ec;
  fs::path dir = output.has_parent_path() ? output.parent_path() : fs::path(".");
  std::string prefix = output.stem().string() + ".rank";
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    bool ours = entry.path().filename() == output.filename() ||
                (name.rfind(prefix, 0) == 0 && entry.path().extension() == output.extension());
    if (ours && entry.is_regular_file(ec) && entry.last_write_time(ec) >= start) {
      found.push_back(entry.path());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

int record_application(const RecordOptions& options, std::ostream& report) {
  if (options.command.empty()) throw UsageError("r3 record: give the application to run after --");
  ApplicationEnvironment env;
  env.dropped_prefixes.push_back("R3_RECORD_");
  const fs::path output = fs::absolute(options.output);
  env.set.push_back(std::string(kOutputVariable) + "=" + output.string());
  env.set.push_back(std::string(kKernelsVariable) + "=" + options.kernels);
  env.set.push_back(std::string(kLaunchesVariable) + "=" + std::to_string(options.launches));
  env.set.push_back(std::string(kRanksVariable) + "=" + options.ranks);
  env.set.push_back(std::string(kCaptureVariable) + "=" + options.capture);
  // CUDA applications are recorded by the injection library (built with CUDA); CUDA loads it
  // only into processes that use CUDA.
  if (auto injection = find_cuda_injection_library())
    env.set.push_back("CUDA_INJECTION64_PATH=" + injection->string());
  if (options.kokkos) {
    for (std::string& v : kokkos_tool_variables(find_kokkos_library(kConnectorFile)))
      env.set.push_back(std::move(v));
  }

  // File times have the file system's resolution: compare with a moment just before the start.
  const auto start = fs::file_time_type::clock::now() - std::chrono::seconds(2);
  const int status = run_application("r3 record", options.command, env);

  std::vector<fs::path> captures = written_since(output, start);
  // Started by srun/mpirun as one rank of many (`srun -n 4 r3 record --ranks 0,3 -- app`): the
  // other ranks write their own files at their own pace, so this one reports only its own.
  if (const std::optional<int> rank = log::rank_from_environment()) {
    const std::set<int> selected = session::parse_ranks(options.ranks);
    if (!selected.empty() && !selected.contains(*rank)) {
      report << "r3 record: rank " << *rank << " is not among --ranks " << options.ranks
             << "; it ran unrecorded\n";
      if (status != 0) report << "r3 record: the application exited with status " << status << "\n";
      return status;
    }
    const fs::path own = session::rank_output_path(output.string(), *rank);
    std::erase_if(captures, [&](const fs::path& path) { return path != own; });
  }
  for (const fs::path& path : captures) {
    auto reader = capture::CaptureReader::open(path);
    capture::CaptureStats stats = reader.stats();
    report << "r3 record: " << path.string() << ": " << stats.kernels << " kernel(s), "
           << stats.launches << " launch(es), " << format_bytes(stats.unique_bytes) << " distinct, "
           << format_bytes(stats.file_bytes) << " on disk";
    if (!reader.complete()) report << " (not closed: the application did not exit normally)";
    report << "\n";
    for (const capture::Kernel& kernel : reader.kernels()) {
      report << "  " << kernel.name << ": " << kernel.launches.size() << " launch(es)\n";
    }
  }
  if (status != 0) {
    report << "r3 record: the application exited with status " << status << "\n";
    return status;
  }
  if (captures.empty()) {
    report << "r3 record: nothing was recorded (the application's messages above say why)\n";
    return 1;
  }
  return 0;
}

}  // namespace r3::record
