// What `r3 apply` hands the CUDA apply library (libr3apply_cuda.so) for one application run: per
// tuned kernel, the winner's code compiled for the GPU at hand and the launch shape it asks for.
// A text file (format "r3-apply-manifest", version 1) next to the code files, read once when the
// library starts; plain text parsing, without CUDA, so that it is tested on any machine.
//
//   r3-apply-manifest 1
//   architecture sm_90
//   kernel _Z9heat_stepPKfPfii
//     code 0.cubin
//     function _Z9heat_stepPKfPfii
//     block 32 8 1
//     grid derived
//     speedup 1.42
//     tolerance f32 1e-05 1e-06
//     global scale
//   end
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "r3/capture.hpp"

namespace r3::record::cuda {

// How `r3 apply --check` compares an element type: |x - ref| <= atol + rtol |ref| (the run's
// verify settings); a type without one is compared bit for bit.
struct TypeTolerance {
  capture::ElementType type = capture::ElementType::unknown;
  double rtol = 0, atol = 0;
  friend bool operator==(const TypeTolerance&, const TypeTolerance&) = default;
};

struct AppliedKernel {
  std::string kernel;                  // the application's kernel, as the driver names it (mangled)
  std::filesystem::path code;          // a cubin; relative paths are to the manifest's directory
  std::string function;                // the winner's name in that code
  std::optional<capture::Dim3> block;  // a new block shape; none: the application's own
  bool keep_grid = false;              // with block: the application's grid, not a derived one
  double speedup = 0;                  // the replay-confirmed factor (0: not confirmed)
  std::vector<TypeTolerance> tolerances;
  // The module variables (__device__, __constant__) the recorded kernel's module has: the
  // winner's own copies are given the application's values before each launch, and the
  // application's get the winner's after it.
  std::vector<std::string> globals;
  friend bool operator==(const AppliedKernel&, const AppliedKernel&) = default;
};

struct ApplyManifest {
  std::string architecture;  // the GPU the code is for ("sm_90")
  std::vector<AppliedKernel> kernels;
  friend bool operator==(const ApplyManifest&, const ApplyManifest&) = default;
};

inline constexpr std::string_view kManifestFormat = "r3-apply-manifest";
inline constexpr int kManifestVersion = 1;

std::string to_text(const ApplyManifest& manifest);
// Throws r3::FormatError naming `file` and the line for anything it does not know.
ApplyManifest parse_manifest(std::string_view text, const std::string& file);
ApplyManifest read_manifest(const std::filesystem::path& file);

// The shape the winner is launched with, given the launch the application asked for: its new
// block, with the grid that covers the same threads (capture::covering_grid, as replay derives
// it from the recorded launch) or, with keep_grid, the application's grid; the application's
// shape without a new block.
struct LaunchDims {
  capture::Dim3 grid, block;
};
LaunchDims winner_launch(const AppliedKernel& kernel, const LaunchDims& asked);

}  // namespace r3::record::cuda
