// Launch shapes of GPU variants: the grid derived from a new block shape, and the limits that
// make an impossible shape a clean failure.
#include <gtest/gtest.h>

#include "launch_shape.hpp"

namespace r3::replay {
namespace {

capture::Launch recorded(capture::Dim3 grid, capture::Dim3 block) {
  capture::Launch launch;
  launch.grid = grid;
  launch.block = block;
  launch.shared_memory_bytes = 256;
  return launch;
}

TEST(LaunchShape, TheRecordedShapeWhenNoBlockIsGiven) {
  LaunchShape shape = derive_shape(recorded({16, 8, 1}, {16, 16, 1}), std::nullopt);
  EXPECT_EQ(shape.grid, (capture::Dim3{16, 8, 1}));
  EXPECT_EQ(shape.block, (capture::Dim3{16, 16, 1}));
  EXPECT_EQ(shape.dynamic_shared_bytes, 256u);
}

TEST(LaunchShape, ANewBlockKeepsTheThreadCountPerDimensionRoundingUp) {
  LaunchShape shape = derive_shape(recorded({16, 8, 3}, {16, 16, 1}), capture::Dim3{64, 3, 1});
  EXPECT_EQ(shape.block, (capture::Dim3{64, 3, 1}));
  EXPECT_EQ(shape.grid.x, 4u);   // 256 threads / 64
  EXPECT_EQ(shape.grid.y, 43u);  // ceil(128 / 3)
  EXPECT_EQ(shape.grid.z, 3u);
}

TEST(LaunchShape, LimitsNameWhatIsExceeded) {
  LaunchLimits limits;
  limits.function_max_threads = 512;
  limits.registers = 128;
  limits.static_shared_bytes = 40000;
  limits.max_shared_bytes = 48 * 1024;
  LaunchShape ok{{8, 8, 1}, {16, 16, 1}, 0, {}};
  EXPECT_EQ(check_shape(ok, limits), "");
  LaunchShape too_many{{8, 8, 1}, {64, 32, 1}, 0, {}};
  EXPECT_NE(check_shape(too_many, limits).find("2048 threads exceeds the device's 1024"),
            std::string::npos);
  LaunchShape registers{{8, 8, 1}, {32, 32, 1}, 0, {}};
  EXPECT_NE(check_shape(registers, limits).find("128 registers per thread"), std::string::npos);
  LaunchShape deep{{8, 8, 1}, {1, 1, 128}, 0, {}};
  EXPECT_NE(check_shape(deep, limits).find("maximum block dimensions 1024x1024x64"),
            std::string::npos);
  LaunchShape shared{{8, 8, 1}, {16, 16, 1}, 10000, {}};
  EXPECT_NE(check_shape(shared, limits).find("10000 bytes of dynamic shared memory"),
            std::string::npos);
  LaunchShape empty{{0, 8, 1}, {16, 16, 1}, 0, {}};
  EXPECT_NE(check_shape(empty, limits).find("empty launch shape"), std::string::npos);
}

}  // namespace
}  // namespace r3::replay
