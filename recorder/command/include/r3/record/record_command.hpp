// `r3 record`: runs an application with the environment that turns its recorders on, waits for
// it, and reports what was captured.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace r3::record {

struct RecordOptions {
  std::string kernels = ".*";                      // regex over kernel names
  std::filesystem::path output = "r3-capture.h5";  // one file per rank under MPI
  unsigned launches = 1;                           // distinct launches per kernel
  std::string ranks;                               // "0,3"; empty: every rank
  bool kokkos = false;                             // load the Kokkos Tools connector
  std::string capture = "reachable";               // CUDA: memory reachable from args, or "all"
  std::vector<std::string> command;                // the application and its arguments
};

// Returns the application's exit status, or 1 when it succeeded but nothing was recorded.
// Throws r3::Error when the application cannot be started.
int record_application(const RecordOptions& options, std::ostream& report);

}  // namespace r3::record
