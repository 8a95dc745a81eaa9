#include "r3/record_command.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ostream>

#include "r3/capture.hpp"
#include "r3/error.hpp"
#include "r3/inspect.hpp"
#include "r3/record.hpp"

extern char** environ;

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

int wait_for(pid_t child) {
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) throw Error(std::string("waitpid: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace

int record_application(const RecordOptions& options, std::ostream& report) {
  if (options.command.empty()) throw UsageError("r3 record: give the application to run after --");
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    if (entry.rfind("R3_RECORD_", 0) != 0) environment.push_back(entry);
  }
  const fs::path output = fs::absolute(options.output);
  environment.push_back(std::string(kOutputVariable) + "=" + output.string());
  environment.push_back(std::string(kKernelsVariable) + "=" + options.kernels);
  environment.push_back(std::string(kLaunchesVariable) + "=" + std::to_string(options.launches));
  environment.push_back(std::string(kRanksVariable) + "=" + options.ranks);

  std::vector<char*> argv;
  for (const std::string& a : options.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);

  // File times have the file system's resolution: compare with a moment just before the start.
  const auto start = fs::file_time_type::clock::now() - std::chrono::seconds(2);
  pid_t child = 0;
  int rc = posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), envp.data());
  if (rc != 0) {
    throw Error("r3 record: cannot start '" + options.command[0] + "': " + std::strerror(rc));
  }
  int status = wait_for(child);

  std::vector<fs::path> captures = written_since(output, start);
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
