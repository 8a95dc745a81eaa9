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

// A TeamPolicy ParallelFor's closure as Kokkos 4 lays it out on CUDA: the functor (three view
// pointers and a size), the policy (execution space, league, team size, vector length, scratch
// sizes, chunk, AUTO flags), then the league, team size, vector length, shared memory start and
// size, scratch pointers and sizes, and the scratch locks.
Bytes team_closure(std::int32_t policy_team, bool auto_team, bool auto_vector,
                   std::int32_t shmem_size = 0, std::int64_t level1_scratch = 0) {
  Bytes b;
  put(b, 0x7f0000001000);
  put(b, 0x7f0000801000);
  put(b, 0x7f0000901000);
  put(b, 512);
  put(b, 0x55550000);  // execution space: its instance's shared pointer
  put(b, 0x55550040);
  put32(b, 4096);  // policy: league, team size, vector length
  put32(b, policy_team);
  put32(b, 1);
  put32(b, 0);
  for (int i = 0; i < 4; ++i) put(b, 0);  // team and thread scratch sizes
  put32(b, 32);                           // chunk
  b.push_back(std::byte{auto_team});
  b.push_back(std::byte{auto_vector});
  b.push_back(std::byte{0});
  b.push_back(std::byte{0});
  put32(b, 4096);  // the closure: league, team size, vector length, shared memory start, size
  put32(b, 128);
  put32(b, 1);
  put32(b, 8 * (128 + 2));
  put32(b, shmem_size);
  put32(b, 0);
  put(b, 0);  // scratch pointers
  put(b, 0x7f00ff000000);
  put(b, shmem_size);  // scratch sizes
  put(b, level1_scratch);
  put32(b, -1);  // scratch pool id
  put32(b, 0);
  put(b, 0x7f00fe000000);  // scratch locks
  put(b, 8192);
  return b;
}

std::int32_t get32(const Bytes& b, std::size_t at) {
  std::int32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

TEST(KokkosPolicy, FindsATeamPolicyAndGivesItAnotherTeamShape) {
  EXPECT_TRUE(is_team_parallel_for(
      "void Kokkos::Impl::cuda_parallel_launch_local_memory<Kokkos::Impl::ParallelFor<main::"
      "{lambda(Kokkos::Impl::CudaTeamMember const&)#1}, Kokkos::TeamPolicy<>, Kokkos::Cuda>>("
      "Kokkos::Impl::ParallelFor<main::{lambda(Kokkos::Impl::CudaTeamMember const&)#1}, "
      "Kokkos::TeamPolicy<>, Kokkos::Cuda>)"));
  EXPECT_FALSE(is_team_parallel_for(
      "void Kokkos::Impl::cuda_parallel_launch_local_memory<Kokkos::Impl::ParallelReduce<"
      "Kokkos::Impl::CombinedFunctorReducer<F, R>, Kokkos::TeamPolicy<>, Kokkos::Cuda>>(...)"));

  const Bytes args = team_closure(-1, true, true);
  const std::uint32_t recorded_shared = 8 * (128 + 2);
  const auto shape = find_team_shape(args, {1, 128, 1}, {4096, 1, 1}, recorded_shared);
  ASSERT_TRUE(shape.has_value());
  EXPECT_EQ(shape->offset, 104u);
  EXPECT_EQ(shape->team_size, 128);
  EXPECT_EQ(shape->vector_length, 1);
  EXPECT_FALSE(shape->uses_scratch);
  EXPECT_TRUE(shape->policy_found);
  EXPECT_TRUE(shape->auto_team_size);
  EXPECT_TRUE(shape->auto_vector_length);

  const auto wide = reshape_team(args, *shape, {8, 32, 1});
  ASSERT_TRUE(wide.has_value());
  EXPECT_EQ(get32(wide->args, 104 + 4), 32);       // team size
  EXPECT_EQ(get32(wide->args, 104 + 8), 8);        // vector length
  EXPECT_EQ(get32(wide->args, 104 + 12), 8 * 34);  // shared memory start
  EXPECT_EQ(get32(wide->args, 104 - 56 + 4), 32);  // the policy copy, as tuned
  EXPECT_EQ(get32(wide->args, 104 - 56 + 8), 8);
  EXPECT_EQ(get(wide->args, 0), 0x7f0000001000) << "the functor is left as it is";
  EXPECT_EQ(wide->block, (capture::Dim3{8, 32, 1}));
  EXPECT_EQ(wide->grid, (capture::Dim3{4096, 1, 1})) << "one block per team";
  ASSERT_TRUE(wide->dynamic_shared_bytes.has_value());
  EXPECT_EQ(*wide->dynamic_shared_bytes, 8u * 34);

  EXPECT_FALSE(reshape_team(args, *shape, {3, 32, 1})) << "vector length not a power of two";
  EXPECT_FALSE(reshape_team(args, *shape, {64, 2, 1})) << "vector length above 32";
  EXPECT_FALSE(reshape_team(args, *shape, {32, 64, 1})) << "2048 threads";
  EXPECT_FALSE(reshape_team(args, *shape, {4, 4, 2})) << "a z extent";
}

TEST(KokkosPolicy, ATeamPolicysFixedSizesAndScratchAreRead) {
  const std::uint32_t recorded_shared = 8 * (128 + 2);
  // A team size the application set, with AUTO vector length.
  const auto fixed =
      find_team_shape(team_closure(128, false, true), {1, 128, 1}, {4096, 1, 1}, recorded_shared);
  ASSERT_TRUE(fixed.has_value());
  EXPECT_TRUE(fixed->policy_found);
  EXPECT_FALSE(fixed->auto_team_size);
  EXPECT_TRUE(fixed->auto_vector_length);
  // Level-0 scratch shows in the shared memory; level-1 scratch only in its size.
  const auto shared = find_team_shape(team_closure(-1, true, true, 256), {1, 128, 1}, {4096, 1, 1},
                                      recorded_shared + 256);
  ASSERT_TRUE(shared.has_value());
  EXPECT_TRUE(shared->uses_scratch);
  EXPECT_FALSE(reshape_team(team_closure(-1, true, true, 256), *shared, {1, 64, 1}));
  const auto global = find_team_shape(team_closure(-1, true, true, 0, 4096), {1, 128, 1},
                                      {4096, 1, 1}, recorded_shared);
  ASSERT_TRUE(global.has_value());
  EXPECT_TRUE(global->uses_scratch);
  // A policy whose flags are no flags: the closure is found, its AUTO-ness is not known.
  Bytes odd = team_closure(-1, true, true);
  odd[104 - 4] = std::byte{7};
  const auto unknown = find_team_shape(odd, {1, 128, 1}, {4096, 1, 1}, recorded_shared);
  ASSERT_TRUE(unknown.has_value());
  EXPECT_FALSE(unknown->policy_found);
  EXPECT_FALSE(unknown->auto_team_size);
}

TEST(KokkosPolicy, NoTeamPolicyIsFoundWhereAFactDoesNotHold) {
  const Bytes args = team_closure(-1, true, true);
  const std::uint32_t shared = 8 * (128 + 2);
  EXPECT_FALSE(find_team_shape(args, {1, 64, 1}, {4096, 1, 1}, shared)) << "another team size";
  EXPECT_FALSE(find_team_shape(args, {2, 128, 1}, {4096, 1, 1}, shared)) << "another vector";
  EXPECT_FALSE(find_team_shape(args, {1, 128, 1}, {2048, 1, 1}, shared)) << "another league";
  EXPECT_FALSE(find_team_shape(args, {1, 128, 1}, {4096, 1, 1}, shared + 8)) << "shared memory";
  Bytes twice = args;
  twice.insert(twice.end(), args.begin() + 104, args.end());
  EXPECT_FALSE(find_team_shape(twice, {1, 128, 1}, {4096, 1, 1}, shared)) << "no guess";
  std::mt19937_64 rng(5);
  Bytes noise(4096);
  for (std::byte& x : noise) x = static_cast<std::byte>(rng() % 64);
  EXPECT_FALSE(find_team_shape(noise, {1, 128, 1}, {4096, 1, 1}, shared));
  EXPECT_FALSE(find_team_shape({}, {1, 128, 1}, {4096, 1, 1}, shared));
}

}  // namespace
}  // namespace r3::replay
