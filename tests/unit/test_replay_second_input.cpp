// The second input candidates are verified on (replayer/src/second_input.hpp): floating-point
// regions moved a little and the same way each time, everything else as recorded.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "second_input.hpp"

namespace {

using r3::capture::ElementType;
using r3::replay::second_input;

template <class T>
std::vector<std::byte> bytes(const std::vector<T>& values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}
template <class T>
std::vector<T> values(const std::vector<std::byte>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

TEST(SecondInput, FloatsMoveByAFewPercentOfTheirMeanAndTheSameWayEachTime) {
  std::vector<float> weights(1000, 0.5f);
  const auto moved = values<float>(second_input(bytes(weights), ElementType::f32, 7));
  ASSERT_EQ(moved.size(), weights.size());
  std::size_t changed = 0;
  for (float v : moved) {
    changed += v != 0.5f;
    EXPECT_LE(std::fabs(v - 0.5f), 0.5f / 64 + 1e-6f);
  }
  EXPECT_GT(changed, 990u);
  EXPECT_EQ(second_input(bytes(weights), ElementType::f32, 7), bytes(moved)) << "same seed";
  EXPECT_NE(second_input(bytes(weights), ElementType::f32, 8), bytes(moved)) << "another seed";
}

// A region of zeros (backprop's deltas, where the hidden units saturate) is not left all zero:
// that is what makes a launch that changed nothing change something on the second input.
TEST(SecondInput, ARegionOfZerosIsMovedToo) {
  const auto moved = values<double>(second_input(bytes(std::vector<double>(100, 0.0)), ElementType::f64, 1));
  std::size_t nonzero = 0;
  for (double v : moved) {
    nonzero += v != 0.0;
    EXPECT_LE(std::fabs(v), 1.0 / 64);
  }
  EXPECT_GT(nonzero, 95u);
}

TEST(SecondInput, IntegersUnknownBytesNanAndInfinityStay) {
  const std::vector<int> indices = {0, 1, 2, 3, 4};
  EXPECT_EQ(second_input(bytes(indices), ElementType::i32, 3), bytes(indices));
  const std::vector<std::byte> raw(64, std::byte{0x3f});
  EXPECT_EQ(second_input(raw, ElementType::unknown, 3), raw);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const auto moved = values<float>(second_input(bytes(std::vector<float>{nan, inf, -inf, 1.0f}),
                                                ElementType::f32, 3));
  EXPECT_TRUE(std::isnan(moved[0]));
  EXPECT_EQ(moved[1], inf);
  EXPECT_EQ(moved[2], -inf);
  EXPECT_NE(moved[3], 1.0f);
}

}  // namespace
