// A Kokkos MDRange kernel's closure: its policy is found only where every fact about it holds,
// and a new tile rewrites the policy and gives the block and grid Kokkos launches it with.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "r3/replay/kokkos_policy.hpp"

namespace r3::replay {
namespace {

using Bytes = std::vector<std::byte>;

void put(Bytes& b, std::int64_t v) {
  const std::size_t at = b.size();
  b.resize(at + 8);
  std::memcpy(b.data() + at, &v, 8);
}
void put32(Bytes& b, std::int32_t v) {
  const std::size_t at = b.size();
  b.resize(at + 4);
  std::memcpy(b.data() + at, &v, 4);
}
std::int64_t get(const Bytes& b, std::size_t at) {
  std::int64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

// A closure as Kokkos passes it: the functor (two view pointers and a size), then the policy.
Bytes rank2_closure() {
  Bytes b;
  put(b, 0x7f0000001000);
  put(b, 0x7f0000801000);
  put(b, 1024);
  for (std::int64_t v : {1, 1, 1023, 1023, 8, 8, 128, 128}) put(b, v);  // lower, upper, tile, end
  put(b, 128 * 128);                                                    // tiles
  put(b, 64);                                                           // threads per tile
  put(b, 0);                                                            // what follows
  return b;
}

TEST(KokkosPolicy, FindsAnMDRangePolicyAndRetilesIt) {
  const Bytes args = rank2_closure();
  const auto tiling = find_mdrange_tiling(args, {8, 8, 1}, {128, 128, 1});
  ASSERT_TRUE(tiling.has_value());
  EXPECT_EQ(tiling->offset, 24u);
  EXPECT_EQ(tiling->count_bytes, 8u);
  EXPECT_EQ(tiling->upper, (std::vector<std::int64_t>{1023, 1023}));

  const auto wide = retile(args, *tiling, {32, 4, 1});
  ASSERT_TRUE(wide.has_value());
  EXPECT_EQ(get(wide->args, 24 + 32), 32);  // tile
  EXPECT_EQ(get(wide->args, 24 + 40), 4);
  EXPECT_EQ(get(wide->args, 24 + 48), 32);        // ceil(1022 / 32)
  EXPECT_EQ(get(wide->args, 24 + 56), 256);       // ceil(1022 / 4)
  EXPECT_EQ(get(wide->args, 24 + 64), 32 * 256);  // tiles
  EXPECT_EQ(get(wide->args, 24 + 72), 128);       // threads per tile
  EXPECT_EQ(get(wide->args, 0), 0x7f0000001000) << "the functor is left as it is";
  EXPECT_EQ(wide->block.x, 32u);
  EXPECT_EQ(wide->block.y, 4u);
  EXPECT_EQ(wide->block.z, 1u);
  EXPECT_EQ(wide->grid.x, 32u);
  EXPECT_EQ(wide->grid.y, 256u);
  EXPECT_EQ(wide->grid.z, 1u);
  // The recorded tile gives back the recorded launch.
  const auto same = retile(args, *tiling, {8, 8, 1});
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(same->args, args);
  // A rank-2 policy has no z tile.
  EXPECT_FALSE(retile(args, *tiling, {8, 8, 2}).has_value());
}

TEST(KokkosPolicy, ARank3PolicyWith32BitCountsAndKokkosClampOfZ) {
  Bytes b;
  put(b, 0x7f0000002000);
  for (std::int64_t v : {1, 1, 1, 63, 63, 63, 16, 2, 2, 4, 31, 31}) put(b, v);
  put32(b, 4 * 31 * 31);
  put32(b, 64);
  const auto tiling = find_mdrange_tiling(b, {16, 2, 2}, {4, 31, 31});
  ASSERT_TRUE(tiling.has_value());
  EXPECT_EQ(tiling->count_bytes, 4u);
  const auto cube = retile(b, *tiling, {8, 8, 4});
  ASSERT_TRUE(cube.has_value());
  EXPECT_EQ(cube->grid.x, 8u);
  EXPECT_EQ(cube->grid.y, 8u);
  EXPECT_EQ(cube->grid.z, 16u);
  std::int32_t tiles;
  std::memcpy(&tiles, cube->args.data() + 8 + 96, 4);
  EXPECT_EQ(tiles, 8 * 8 * 16);
  EXPECT_FALSE(retile(b, *tiling, {1, 1, 128}).has_value()) << "Kokkos clamps z to 64";
}

TEST(KokkosPolicy, NothingIsFoundWhereAFactDoesNotHold) {
  const Bytes args = rank2_closure();
  EXPECT_FALSE(find_mdrange_tiling(args, {16, 16, 1}, {64, 64, 1})) << "another block";
  EXPECT_FALSE(find_mdrange_tiling(args, {8, 8, 1}, {64, 128, 1})) << "another grid";
  Bytes wrong_count = args;
  put(wrong_count, 0);
  std::int64_t bad = 5;
  std::memcpy(wrong_count.data() + 24 + 64, &bad, 8);
  EXPECT_FALSE(find_mdrange_tiling(wrong_count, {8, 8, 1}, {128, 128, 1})) << "tile count";
  Bytes twice = args;
  twice.insert(twice.end(), args.begin() + 24, args.begin() + 24 + 80);
  EXPECT_FALSE(find_mdrange_tiling(twice, {8, 8, 1}, {128, 128, 1})) << "two policies: no guess";
  std::mt19937_64 rng(3);
  Bytes noise(4096);
  for (std::byte& x : noise) x = static_cast<std::byte>(rng() % 64);
  EXPECT_FALSE(find_mdrange_tiling(noise, {8, 8, 1}, {128, 128, 1}));
  EXPECT_FALSE(find_mdrange_tiling({}, {8, 8, 1}, {128, 128, 1}));
}

}  // namespace
}  // namespace r3::replay
