// Kokkos policies inside a recorded launch's parameters (an MDRangePolicy's tile, a TeamPolicy's
// team size and vector length), and the same launch with another shape, as Kokkos would make it.
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
#include <string_view>
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
  std::optional<std::uint32_t> dynamic_shared_bytes;  // nullopt: as recorded
};

// The launch with tile `tile` (x, y and, for rank 3, z; z = 1 for rank 2): the policy's tile,
// tile_end, tile count and threads per tile rewritten in a copy of `args`, and the block and grid
// Kokkos' CUDA back-end launches that policy with (Kokkos_Cuda_Parallel_MDRange.hpp). nullopt
// when `tile` is not one of this rank (z != 1 for rank 2, z > 64, which Kokkos clamps).
std::optional<Retiled> retile(std::span<const std::byte> args, const MDRangeTiling& tiling,
                              const capture::Dim3& tile);

// A TeamPolicy ParallelFor (Kokkos_Cuda_Parallel_Team.hpp): Kokkos launches a league of teams as
// grid (league, 1, 1) and block (vector length, team size, 1), with the team reduce space
// (8 * (team size + 2) bytes) and the team's scratch as dynamic shared memory, and its closure
// holds the league size, team size, vector length and the shared memory's layout. The device code
// takes the team shape from the block; only the shared memory's layout is written for one.
struct TeamShape {
  std::size_t offset = 0;  // of the closure's league size in the parameters
  std::uint32_t league = 0;
  std::int32_t team_size = 0, vector_length = 0;  // as recorded: block.y, block.x
  // Scratch the team asked for (level 0: shared memory; level 1: global memory sized per team).
  // A new shape changes how much of it each team gets, which replay cannot redo.
  bool uses_scratch = false;
  // Whether the application's policy left the team size / the vector length to Kokkos
  // (Kokkos::AUTO): only those Kokkos' tuner hands to a tool. Read from the policy the closure
  // copies; false when it is not where Kokkos 4 puts it.
  bool policy_found = false;
  bool auto_team_size = false, auto_vector_length = false;
};

// Whether a demangled kernel name is Kokkos' CUDA launch of a TeamPolicy ParallelFor (a
// parallel_reduce or scan over teams lays its closure out otherwise).
bool is_team_parallel_for(std::string_view demangled_name);

// The TeamPolicy ParallelFor closure of a launch with `block`, `grid` and `dynamic_shared_bytes`:
// the one place in `args` where the league size is grid.x, the team size block.y, the vector
// length block.x, and the shared memory's start (8 * (team size + 2)) plus its size is the
// launch's dynamic shared memory. nullopt when there is none or more than one.
std::optional<TeamShape> find_team_shape(std::span<const std::byte> args,
                                         const capture::Dim3& block, const capture::Dim3& grid,
                                         std::uint32_t dynamic_shared_bytes);

// The launch with block (vector length, team size, 1): the closure's team size and shared
// memory start rewritten in a copy of `args`, the grid kept (one block per team) and the dynamic
// shared memory Kokkos gives that team size. nullopt when the block is no team shape Kokkos
// launches (z != 1, a vector length that is not a power of two up to 32, more than 1024 threads)
// or the team uses scratch.
std::optional<Retiled> reshape_team(std::span<const std::byte> args, const TeamShape& shape,
                                    const capture::Dim3& block);

}  // namespace r3::replay
