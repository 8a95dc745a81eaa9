// `r3 extract FILE -k KERNEL`: the self-contained, device-only unit r3 tunes when a kernel's
// source is the application's own file (r3/compiler/extract.hpp), written out so that a user sees
// what is tuned; with --check it is compiled with NVRTC as the tuning job would.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace r3::replay {

struct ExtractCommandOptions {
  std::filesystem::path file;
  std::string kernel;
  std::filesystem::path compile_commands;  // a compile_commands.json or its directory
  std::vector<std::filesystem::path> include_dirs;
  std::vector<std::string> defines;  // NAME=VALUE
  std::string std;                   // e.g. c++17
  std::filesystem::path output;      // empty: standard output
  bool check = false;                // compile the unit with NVRTC
  std::string arch = "sm_90";
};

// The unit of `kernel` cut from `file` (r3/compiler/extract.hpp), for the tuning job: ok false
// with the reason (Clang's first error, no such kernel, a build without LLVM) otherwise.
struct ExtractedSource {
  bool ok = false;
  std::string text;
  std::string diagnostics;
  std::size_t pieces = 0;
  // Per kernel parameter, the floating type of a struct it points to (see
  // compiler::ExtractedUnit::parameter_struct_types).
  std::vector<std::string> parameter_struct_types;
  std::vector<std::string> parameter_names;
};
ExtractedSource extract_source(const std::filesystem::path& file, const std::string& kernel,
                               const std::map<std::string, std::string>& defines,
                               const std::vector<std::filesystem::path>& include_dirs,
                               const std::vector<std::string>& flags);

// Returns 0 when a unit was written (and, with check, compiled), 1 otherwise. The unit goes to
// `out` (or the output file), what was done to `log`.
int extract_command(const ExtractCommandOptions& options, std::ostream& out, std::ostream& log);

}  // namespace r3::replay
