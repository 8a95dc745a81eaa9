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

}  // namespace r3::replay
