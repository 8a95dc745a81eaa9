// The launch shape of a GPU variant: the recorded one, or a new block shape with the grid
// derived so that each dimension keeps its recorded total thread count; and the check against
// the device's and the compiled function's limits that makes an impossible shape a clean
// failure instead of a launch error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "r3/capture.hpp"

namespace r3::replay {

struct LaunchShape {
  capture::Dim3 grid;
  capture::Dim3 block;
  std::uint32_t dynamic_shared_bytes = 0;
  // Parameters other than the recorded ones, when the shape changes them too (a Kokkos MDRange
  // kernel's closure holds its tile: kokkos_policy.hpp); empty: the recorded parameters.
  std::vector<std::byte> args;
};

// grid.d = ceil(recorded grid.d * recorded block.d / block.d) in every dimension; with
// keep_grid, the recorded grid.
LaunchShape derive_shape(const capture::Launch& recorded,
                         const std::optional<capture::Dim3>& block, bool keep_grid = false);

struct LaunchLimits {
  std::uint32_t max_threads_per_block = 1024;  // the device's
  std::uint32_t function_max_threads = 1024;   // the compiled function's (registers, bounds)
  capture::Dim3 max_block{1024, 1024, 64};
  capture::Dim3 max_grid{2147483647u, 65535, 65535};
  std::uint64_t max_shared_bytes = 48 * 1024;  // per block, opt-in maximum
  std::uint64_t static_shared_bytes = 0;       // the function's
  int registers = 0;                           // the function's, per thread (for messages)
};

// "" when the shape can be launched, else why not ("block 64x32x1 = 2048 threads exceeds ...").
std::string check_shape(const LaunchShape& shape, const LaunchLimits& limits);

std::string to_string(const capture::Dim3& dim);  // "64x4x1"

}  // namespace r3::replay
