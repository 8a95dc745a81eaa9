// `r3 apply`: runs a Kokkos application with the tuned values of an r3 result, through the
// Kokkos Tools connector (libr3kokkos.so), with no change to the application.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace r3::record {

struct ApplyOptions {
  std::filesystem::path result;        // a best.yaml or a results directory
  bool kokkos_without_tuning = false;  // preload libr3kokkos_compat.so
  std::vector<std::string> command;    // the application and its arguments
};

// Checks the result (throws r3::ConfigError naming the file and key), then runs the
// application and returns its exit status.
int apply_to_application(const ApplyOptions& options, std::ostream& report);

}  // namespace r3::record
