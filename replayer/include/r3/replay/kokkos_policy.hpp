// A Kokkos MDRangePolicy inside a recorded launch's parameters, and the same launch with another
// tile, as Kokkos would make it.
//
// Kokkos on CUDA passes a kernel's closure (functor and policy) by value as its one parameter. An
// MDRange kernel's block is its tile, and its device code walks the tiles the policy holds
// (lower, upper, tile, tile_end: int64 arrays of the rank, then the tile count and the threads
// per tile), not those of the block it runs with: a new block alone is not a launch the
// application can make. retile() changes both, so that what replay measures for a tile is what
// the application runs when Kokkos' tuning interface gives it that tile (`r3 apply`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "r3/capture.hpp"

namespace r3::replay {

struct MDRangeTiling {
  std::size_t offset = 0;       // of the policy's lower bounds in the parameters
  std::size_t count_bytes = 8;  // the width of its tile count and threads per tile (4 or 8)
  std::vector<std::int64_t> lower, upper, tile, tile_end;  // one per dimension (rank 2 or 3)
};

// The policy of a rank-2 or rank-3 MDRange ParallelFor launched with `block` and `grid`: the one
// place in `args` where lower < upper, tile_end = ceil((upper - lower) / tile), the tile is the
// block, the grid is Kokkos' for that tile, and the tile count and threads per tile follow.
// nullopt when there is none or more than one (then the launch is not retiled).
std::optional<MDRangeTiling> find_mdrange_tiling(std::span<const std::byte> args,
                                                 const capture::Dim3& block,
                                                 const capture::Dim3& grid);

struct Retiled {
  std::vector<std::byte> args;
  capture::Dim3 block, grid;
};

// The launch with tile `tile` (x, y and, for rank 3, z; z = 1 for rank 2): the policy's tile,
// tile_end, tile count and threads per tile rewritten in a copy of `args`, and the block and grid
// Kokkos' CUDA back-end launches that policy with (Kokkos_Cuda_Parallel_MDRange.hpp). nullopt
// when `tile` is not one of this rank (z != 1 for rank 2, z > 64, which Kokkos clamps).
std::optional<Retiled> retile(std::span<const std::byte> args, const MDRangeTiling& tiling,
                              const capture::Dim3& tile);

}  // namespace r3::replay
