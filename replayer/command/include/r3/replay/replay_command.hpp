// `r3 replay`: replays the recorded launches of one kernel, as recorded or as a variant, and
// prints placement, verification per region and times.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "r3/capture.hpp"
#include "r3/config/tune_config.hpp"
#include "r3/replay/backend.hpp"

namespace r3::replay {

struct ReplayOptions {
  std::filesystem::path capture;
  std::string kernel;            // empty: the capture's only kernel
  std::filesystem::path source;  // empty: the recorded code
  std::string entry;
  std::string flags;  // compiler flags, separated by spaces
  std::string passes;
  std::string compiler;              // nvrtc, clang or recorded; empty: the backend's default
  std::vector<std::string> defines;  // NAME=VALUE
  std::vector<std::filesystem::path> include_dirs;  // besides the source's own directory
  std::optional<capture::Dim3> block;
  bool keep_grid = false;             // with block: the recorded grid, not a derived one
  std::vector<std::size_t> launches;  // empty: all
  unsigned warmup = 2;
  unsigned repeats = 10;
  bool flush_l2 = false;
};

// The options that replay a kernel as a tune.yaml describes it — its source, entry, defines,
// include directories, flags, passes, block, launches and timing — which is what the best.yaml
// of a tuning run's results holds. `kernel`: a name in tune.yaml's kernels; empty: the only one.
ReplayOptions options_from_tune_yaml(const config::TuneConfig& config, const std::string& kernel);

// The variant the options describe: source (its directory on the include path), entry, defines,
// include directories, flags, passes, compiler, block.
Variant variant_of(const ReplayOptions& options, std::string_view backend);

// The index of kernel `name` in the capture (empty: its only kernel). Throws UnknownKernelError,
// or UsageError when the capture holds several and none is named.
std::size_t kernel_index(const capture::CaptureReader& capture, const std::string& name);

// Returns 0 when every launch verified, 1 otherwise (compile error, wrong result, ...).
int replay_capture(const ReplayOptions& options, std::ostream& out);

}  // namespace r3::replay
