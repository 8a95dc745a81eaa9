#include "r3/replay/kokkos_policy.hpp"

#include <algorithm>
#include <cstring>

namespace r3::replay {
namespace {

// Kokkos' limits on an MDRange grid (mdrange_max_blocks_x, mdrange_max_blocks) and on the block's
// z extent (the device's maxThreadsDim[2], 64 on every NVIDIA GPU), above which it clamps.
constexpr std::int64_t kMaxBlocksX = 2147483647;
constexpr std::int64_t kMaxBlocks = 65535;
constexpr std::int64_t kMaxBlockZ = 64;

std::int64_t read(std::span<const std::byte> bytes, std::size_t at, std::size_t width) {
  if (width == 4) {
    std::int32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
  }
  std::int64_t v;
  std::memcpy(&v, bytes.data() + at, 8);
  return v;
}

void write(std::vector<std::byte>& bytes, std::size_t at, std::size_t width, std::int64_t value) {
  if (width == 4) {
    const auto v = static_cast<std::int32_t>(value);
    std::memcpy(bytes.data() + at, &v, 4);
  } else {
    std::memcpy(bytes.data() + at, &value, 8);
  }
}

std::int64_t tiles(std::int64_t extent, std::int64_t tile) { return (extent + tile - 1) / tile; }

std::int64_t product(const std::vector<std::int64_t>& v) {
  std::int64_t p = 1;
  for (std::int64_t x : v) p *= x;
  return p;
}

// The block and grid Kokkos launches a rank-2 or rank-3 policy with.
void kokkos_shape(const MDRangeTiling& t, capture::Dim3& block, capture::Dim3& grid) {
  const bool rank3 = t.tile.size() == 3;
  const std::int64_t bz = rank3 ? std::min(t.tile[2], kMaxBlockZ) : 1;
  block = {static_cast<std::uint32_t>(t.tile[0]), static_cast<std::uint32_t>(t.tile[1]),
           static_cast<std::uint32_t>(bz)};
  grid = {
      static_cast<std::uint32_t>(std::min(tiles(t.upper[0] - t.lower[0], t.tile[0]), kMaxBlocksX)),
      static_cast<std::uint32_t>(std::min(tiles(t.upper[1] - t.lower[1], t.tile[1]), kMaxBlocks)),
      static_cast<std::uint32_t>(rank3 ? std::min(tiles(t.upper[2] - t.lower[2], bz), kMaxBlocks)
                                       : 1)};
}

bool same(const capture::Dim3& a, const capture::Dim3& b) {
  return a.x == b.x && a.y == b.y && a.z == b.z;
}

// The policy of `rank` at `at`, if every fact about it holds.
std::optional<MDRangeTiling> policy_at(std::span<const std::byte> args, std::size_t at, int rank,
                                       const capture::Dim3& block, const capture::Dim3& grid) {
  const std::size_t arrays = 4 * 8 * static_cast<std::size_t>(rank);
  if (at + arrays + 8 > args.size()) return std::nullopt;
  MDRangeTiling t;
  t.offset = at;
  for (int i = 0; i < rank; ++i) {
    const auto r = static_cast<std::size_t>(rank), k = static_cast<std::size_t>(i);
    t.lower.push_back(read(args, at + 8 * k, 8));
    t.upper.push_back(read(args, at + 8 * (r + k), 8));
    t.tile.push_back(read(args, at + 8 * (2 * r + k), 8));
    t.tile_end.push_back(read(args, at + 8 * (3 * r + k), 8));
    constexpr std::int64_t kLargestExtent = std::int64_t{1} << 40;
    if (t.lower[k] >= t.upper[k] || t.lower[k] < -kLargestExtent || t.upper[k] > kLargestExtent)
      return std::nullopt;
    if (t.tile[k] < 1 || t.tile[k] > 1024) return std::nullopt;
    if (t.tile_end[k] != tiles(t.upper[k] - t.lower[k], t.tile[k])) return std::nullopt;
  }
  capture::Dim3 kokkos_block, kokkos_grid;
  kokkos_shape(t, kokkos_block, kokkos_grid);
  if (!same(kokkos_block, block) || !same(kokkos_grid, grid)) return std::nullopt;
  for (std::size_t width : {std::size_t{8}, std::size_t{4}}) {
    if (at + arrays + 2 * width > args.size()) continue;
    if (read(args, at + arrays, width) == product(t.tile_end) &&
        read(args, at + arrays + width, width) == product(t.tile)) {
      t.count_bytes = width;
      return t;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<MDRangeTiling> find_mdrange_tiling(std::span<const std::byte> args,
                                                 const capture::Dim3& block,
                                                 const capture::Dim3& grid) {
  std::optional<MDRangeTiling> found;
  for (int rank : {2, 3}) {
    for (std::size_t at = 0; at + 8 <= args.size(); at += 8) {
      auto t = policy_at(args, at, rank, block, grid);
      if (!t) continue;
      if (found) return std::nullopt;  // two candidates: do not guess
      found = std::move(t);
    }
  }
  return found;
}

std::optional<Retiled> retile(std::span<const std::byte> args, const MDRangeTiling& tiling,
                              const capture::Dim3& tile) {
  const std::size_t rank = tiling.tile.size();
  if ((rank == 2 && tile.z != 1) || tile.x < 1 || tile.y < 1 || tile.z < 1 || tile.z > kMaxBlockZ)
    return std::nullopt;
  MDRangeTiling t = tiling;
  t.tile = {tile.x, tile.y};
  if (rank == 3) t.tile.push_back(tile.z);
  for (std::size_t k = 0; k < rank; ++k) t.tile_end[k] = tiles(t.upper[k] - t.lower[k], t.tile[k]);
  Retiled out;
  out.args.assign(args.begin(), args.end());
  for (std::size_t k = 0; k < rank; ++k) {
    write(out.args, t.offset + 8 * (2 * rank + k), 8, t.tile[k]);
    write(out.args, t.offset + 8 * (3 * rank + k), 8, t.tile_end[k]);
  }
  const std::size_t counts = t.offset + 4 * 8 * rank;
  write(out.args, counts, t.count_bytes, product(t.tile_end));
  write(out.args, counts + t.count_bytes, t.count_bytes, product(t.tile));
  kokkos_shape(t, out.block, out.grid);
  return out;
}

namespace {

// The closure of a TeamPolicy ParallelFor from its league size on: league (u32), team size,
// vector length (u32), shared memory start and size (i32), then, 8-byte aligned, the scratch
// pointers and sizes of levels 0 and 1.
constexpr std::size_t kTeamSize = 4, kVectorLength = 8, kShmemBegin = 12, kShmemSize = 16;
// The policy the closure copies ends where the closure's league size starts: its league size,
// team size (-1 for AUTO) and vector length are 56 bytes before it, its flags "team size is
// AUTO" and "vector length is AUTO" 4 and 3 bytes before it (TeamPolicyInternal<Cuda>).
constexpr std::size_t kPolicyBack = 56, kPolicyTuneTeamBack = 4, kPolicyTuneVectorBack = 3;
constexpr std::int32_t kMaxVectorLength = 32, kMaxTeamThreads = 1024;

std::int32_t read32(std::span<const std::byte> bytes, std::size_t at) {
  return static_cast<std::int32_t>(read(bytes, at, 4));
}

std::int32_t shmem_begin(std::int32_t team_size) {
  return static_cast<std::int32_t>(sizeof(double)) * (team_size + 2);
}

std::size_t scratch_sizes_at(std::size_t at) {
  return ((at + kShmemSize + 4 + 7) & ~std::size_t{7}) + 16;
}

bool power_of_two(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// Reads the AUTO flags of the policy before the closure's league size at `at`, if it is there.
void read_policy(std::span<const std::byte> args, std::size_t at, TeamShape& shape) {
  if (at < kPolicyBack) return;
  const std::size_t p = at - kPolicyBack;
  const std::int32_t league = read32(args, p), team = read32(args, p + 4),
                     vector = read32(args, p + 8);
  const auto tune_team = static_cast<unsigned char>(args[at - kPolicyTuneTeamBack]);
  const auto tune_vector = static_cast<unsigned char>(args[at - kPolicyTuneVectorBack]);
  if (static_cast<std::uint32_t>(league) != shape.league || vector != shape.vector_length ||
      (team != shape.team_size && team != -1) || tune_team > 1 || tune_vector > 1)
    return;
  // AUTO is a team size of -1 until a tuner sets one; a set team size is not AUTO unless tuned.
  if (team == -1 && tune_team != 1) return;
  shape.policy_found = true;
  shape.auto_team_size = tune_team == 1;
  shape.auto_vector_length = tune_vector == 1;
}

}  // namespace

bool is_team_parallel_for(std::string_view demangled_name) {
  return demangled_name.find("Kokkos::Impl::ParallelFor<") != std::string_view::npos &&
         demangled_name.find("Kokkos::TeamPolicy<") != std::string_view::npos;
}

std::optional<TeamShape> find_team_shape(std::span<const std::byte> args,
                                         const capture::Dim3& block, const capture::Dim3& grid,
                                         std::uint32_t dynamic_shared_bytes) {
  if (block.z != 1 || grid.y != 1 || grid.z != 1 || block.x > kMaxTeamThreads ||
      block.y > kMaxTeamThreads)
    return std::nullopt;
  std::optional<TeamShape> found;
  for (std::size_t at = 0; scratch_sizes_at(at) + 16 <= args.size(); at += 4) {
    if (static_cast<std::uint32_t>(read32(args, at)) != grid.x) continue;
    const std::int32_t team = read32(args, at + kTeamSize);
    if (static_cast<std::uint32_t>(team) != block.y ||
        static_cast<std::uint32_t>(read32(args, at + kVectorLength)) != block.x)
      continue;
    const std::int32_t begin = read32(args, at + kShmemBegin), size = read32(args, at + kShmemSize);
    if (begin != shmem_begin(team) || size < 0 ||
        static_cast<std::int64_t>(begin) + size != dynamic_shared_bytes)
      continue;
    if (found) return std::nullopt;  // two candidates: do not guess
    TeamShape shape;
    shape.offset = at;
    shape.league = grid.x;
    shape.team_size = team;
    shape.vector_length = static_cast<std::int32_t>(block.x);
    const std::int64_t level1 = read(args, scratch_sizes_at(at) + 8, 8);
    shape.uses_scratch = size != 0 || level1 != 0;
    read_policy(args, at, shape);
    found = shape;
  }
  return found;
}

std::optional<Retiled> reshape_team(std::span<const std::byte> args, const TeamShape& shape,
                                    const capture::Dim3& block) {
  const auto vector = static_cast<std::int64_t>(block.x), team = static_cast<std::int64_t>(block.y);
  if (shape.uses_scratch || block.z != 1 || !power_of_two(vector) || vector > kMaxVectorLength ||
      team < 1 || vector * team > kMaxTeamThreads)
    return std::nullopt;
  Retiled out;
  out.args.assign(args.begin(), args.end());
  const auto t = static_cast<std::int32_t>(team), v = static_cast<std::int32_t>(vector);
  write(out.args, shape.offset + kTeamSize, 4, t);
  write(out.args, shape.offset + kVectorLength, 4, v);
  write(out.args, shape.offset + kShmemBegin, 4, shmem_begin(t));
  if (shape.policy_found) {  // the policy copy as a tuned policy would be
    const std::size_t p = shape.offset - kPolicyBack;
    write(out.args, p + 4, 4, t);
    write(out.args, p + 8, 4, v);
  }
  out.block = {block.x, block.y, 1};
  out.grid = {shape.league, 1, 1};
  out.dynamic_shared_bytes = static_cast<std::uint32_t>(shmem_begin(t));
  return out;
}

}  // namespace r3::replay
