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
using r3::replay::check_on_second_input;
using r3::replay::RunOptions;
using r3::replay::second_input;
using r3::replay::second_input_memory_short;

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

// The second input judges the work done, not the precision: rounding a thousand times the f32
// tolerance passes, elements left as they were, a wrong value and a change to a region the
// application's code left alone do not.
TEST(SecondInput, ComparesLooselyButCountsSkippedWorkAndUntouchedRegionsBitwise) {
  r3::capture::Region region;
  region.name = "w";
  region.element_type = ElementType::f32;
  std::vector<float> before(1000), expected(1000);
  for (std::size_t i = 0; i < before.size(); ++i) {
    before[i] = 0.5f + 0.001f * float(i);
    expected[i] = before[i] + 0.01f;
  }
  const RunOptions options;
  auto check = [&](const std::vector<float>& actual, const std::vector<float>& reference) {
    return check_on_second_input(bytes(actual), bytes(reference), bytes(before), region, options);
  };
  std::vector<float> rounded = expected;
  for (float& v : rounded) v *= 1.0f + 2e-4f;
  EXPECT_TRUE(check(rounded, expected).passed);
  std::vector<float> lazy = expected;
  for (std::size_t i = 0; i < 20; ++i) lazy[i * 50] = before[i * 50];
  const auto skipped = check(lazy, expected);
  EXPECT_FALSE(skipped.passed);
  EXPECT_EQ(skipped.left_unchanged, 20u);
  std::vector<float> wrong = expected;
  wrong[500] *= 1.1f;
  EXPECT_FALSE(check(wrong, expected).passed);
  std::vector<float> touched = before;
  touched[3] += 1e-6f;
  const auto untouched = check(touched, before);
  EXPECT_FALSE(untouched.passed) << "a region the application's code left alone stays bitwise";
  EXPECT_FALSE(untouched.expected_to_change);
}

// The CUDA backend computes what a region's check needs once per launch (whether the
// application's code changed it, its mean magnitude) and the rule per candidate: the rule is the
// one check_on_second_input applies, also where tune.yaml gives the region another type than the
// one the reference was computed for.
TEST(SecondInput, TheRuleFromAReferenceComputedOnceIsTheRuleOfEachCheck) {
  r3::capture::Region region;
  region.name = "w";
  region.element_type = ElementType::unknown;  // recorded as raw bytes
  std::vector<float> before(256), expected(256);
  for (std::size_t i = 0; i < before.size(); ++i) {
    before[i] = 4.0f + float(i % 7);
    expected[i] = before[i] * 2.0f;
  }
  const auto reference =
      r3::replay::second_input_reference(bytes(expected), bytes(before), region.element_type);
  EXPECT_TRUE(reference.changes);
  RunOptions options;
  const auto as_recorded =
      r3::replay::second_input_rule(reference, bytes(expected), region, options);
  EXPECT_EQ(as_recorded.type, ElementType::unknown);
  EXPECT_TRUE(as_recorded.tolerance.bitwise);
  options.verify.region_types["w"] = ElementType::f32;
  const auto as_f32 = r3::replay::second_input_rule(reference, bytes(expected), region, options);
  EXPECT_EQ(as_f32.type, ElementType::f32);
  double mean = 0;
  for (float v : expected) mean += v;
  mean /= double(expected.size());
  EXPECT_NEAR(as_f32.tolerance.atol, r3::replay::kSecondInputLooseness * mean, 1e-9)
      << "the mean magnitude of the elements as f32, not the reference's (computed as bytes)";
  std::vector<float> off = expected;
  off[9] += float(0.5 * r3::replay::kSecondInputLooseness * mean);
  EXPECT_TRUE(
      check_on_second_input(bytes(off), bytes(expected), bytes(before), region, options).passed);
  off[9] += float(4 * r3::replay::kSecondInputLooseness * mean);
  EXPECT_FALSE(
      check_on_second_input(bytes(off), bytes(expected), bytes(before), region, options).passed);
  const auto unchanged =
      r3::replay::second_input_reference(bytes(before), bytes(before), ElementType::f32);
  EXPECT_FALSE(unchanged.changes);
  EXPECT_TRUE(
      r3::replay::second_input_rule(unchanged, bytes(before), region, options).tolerance.bitwise);
}

// Second inputs that would take more than half the host memory available are not kept.
TEST(SecondInput, IsLeftOutWhenHostMemoryWouldBeShort) {
  EXPECT_EQ(second_input_memory_short(1 << 20), "");
  const std::string why = second_input_memory_short(std::uint64_t{1} << 62);
  EXPECT_NE(why.find("host memory is short"), std::string::npos) << why;
}

}  // namespace
