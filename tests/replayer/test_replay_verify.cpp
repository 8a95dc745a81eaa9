// Region comparison: bitwise and tolerant, per element type.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "verify.hpp"

namespace {

using r3::capture::ElementType;
using r3::replay::compare_region;
using r3::replay::RegionCheck;
using r3::replay::Tolerance;

template <class T>
RegionCheck compare(const std::vector<T>& actual, const std::vector<T>& expected, ElementType type,
                    Tolerance tolerance) {
  return compare_region(std::as_bytes(std::span(actual)), std::as_bytes(std::span(expected)), type,
                        tolerance);
}

TEST(Verify, IdenticalRegionsPass) {
  std::vector<float> v = {1, 2, 3};
  RegionCheck check = compare(v, v, ElementType::f32, Tolerance::exact());
  EXPECT_TRUE(check.passed);
  EXPECT_EQ(check.elements, 3u);
  EXPECT_EQ(check.mismatches, 0u);
  EXPECT_EQ(check.first_bad_index, -1);
  EXPECT_EQ(check.tolerance, "bitwise");
}

TEST(Verify, FloatsWithinTolerancePassAndOutsideFail) {
  std::vector<float> expected = {1.0f, 100.0f, -5.0f, 0.0f};
  std::vector<float> close = {1.000001f, 100.0001f, -5.0f, 1e-9f};
  RegionCheck ok = compare(close, expected, ElementType::f32, Tolerance::relative(1e-5, 1e-8));
  EXPECT_TRUE(ok.passed) << ok.mismatches;
  EXPECT_GT(ok.max_error, 0.0);
  std::vector<float> off = {1.0f, 101.0f, -5.0f, 0.5f};
  RegionCheck bad = compare(off, expected, ElementType::f32, Tolerance::relative(1e-5, 1e-8));
  EXPECT_FALSE(bad.passed);
  EXPECT_EQ(bad.mismatches, 2u);
  EXPECT_EQ(bad.first_bad_index, 1);
  EXPECT_DOUBLE_EQ(bad.max_error, 1.0);
  EXPECT_EQ(bad.tolerance, "rtol=1e-05 atol=1e-08");
}

// backprop's weight update adds ~1e-7 to weights of ~0.5: a candidate that skips 15/16 of the
// updates is within every element's tolerance. The elements the recorded launch changed must be
// changed by the candidate too (all but 1%).
TEST(Verify, SkippedUpdatesBelowTheToleranceAreCaught) {
  std::vector<float> before(1000), after(1000);
  for (std::size_t i = 0; i < before.size(); ++i) {
    before[i] = 0.5f + 0.001f * static_cast<float>(i % 7);
    after[i] = before[i] + 1e-6f;  // a few ulps: within rtol 1e-5
  }
  std::vector<float> skipped = before;
  for (std::size_t i = 0; i < skipped.size(); i += 16) skipped[i] = after[i];
  auto with_before = [&](const std::vector<float>& actual) {
    return compare_region(std::as_bytes(std::span(actual)), std::as_bytes(std::span(after)),
                          ElementType::f32, Tolerance::relative(1e-5, 1e-8),
                          std::as_bytes(std::span(before)));
  };
  EXPECT_TRUE(compare(skipped, after, ElementType::f32, Tolerance::relative(1e-5, 1e-8)).passed)
      << "within tolerance: the element-wise check alone cannot tell";
  RegionCheck lazy = with_before(skipped);
  EXPECT_FALSE(lazy.passed);
  EXPECT_EQ(lazy.mismatches, 0u);
  EXPECT_EQ(lazy.changed, 1000u);
  EXPECT_EQ(lazy.left_unchanged, 1000u - 63u);
  EXPECT_TRUE(r3::replay::left_work_undone(lazy));
  // Every update made, rounded differently: passes. One in a hundred left alone is tolerated.
  std::vector<float> rounded = after;
  for (float& v : rounded) v = std::nextafter(v, 1.0f);
  EXPECT_TRUE(with_before(rounded).passed);
  std::vector<float> almost = after;
  for (std::size_t i = 0; i < almost.size(); i += 100) almost[i] = before[i];
  RegionCheck few = with_before(almost);
  EXPECT_EQ(few.left_unchanged, 10u);
  EXPECT_TRUE(few.passed);
  almost[1] = before[1];
  EXPECT_FALSE(with_before(almost).passed) << "11 of 1000 left alone";
}

TEST(Verify, IntegersAreBitwiseAndReportTheError) {
  std::vector<std::int32_t> expected = {5, 6, 7, 8};
  std::vector<std::int32_t> off_by_one = {5, 6, 8, 8};
  RegionCheck check = compare(off_by_one, expected, ElementType::i32, Tolerance::exact());
  EXPECT_FALSE(check.passed);
  EXPECT_EQ(check.mismatches, 1u);
  EXPECT_EQ(check.first_bad_index, 2);
  EXPECT_DOUBLE_EQ(check.max_error, 1.0);
}

TEST(Verify, NaNMatchesNaNButNotANumber) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> expected = {nan, 1.0};
  EXPECT_TRUE(compare(std::vector<double>{nan, 1.0}, expected, ElementType::f64,
                      Tolerance::relative(1e-9, 0))
                  .passed);
  RegionCheck check =
      compare(std::vector<double>{0.0, 1.0}, expected, ElementType::f64, Tolerance::relative(1, 1));
  EXPECT_FALSE(check.passed);
  EXPECT_TRUE(std::isinf(check.max_error));
}

TEST(Verify, HalfAndBfloatAreComparedAsNumbers) {
  // f16: 1.0 = 0x3c00, 1.0009765625 = 0x3c01 (one ulp); bf16: 1.0 = 0x3f80, 1.0078125 = 0x3f81.
  std::vector<std::uint16_t> half_expected = {0x3c00}, half_actual = {0x3c01};
  EXPECT_TRUE(
      compare(half_actual, half_expected, ElementType::f16, Tolerance::relative(1e-3, 0)).passed);
  RegionCheck half =
      compare(half_actual, half_expected, ElementType::f16, Tolerance::relative(1e-4, 0));
  EXPECT_FALSE(half.passed);
  EXPECT_NEAR(half.max_error, 0.0009765625, 1e-12);
  std::vector<std::uint16_t> bf_expected = {0x3f80}, bf_actual = {0x3f81};
  EXPECT_TRUE(
      compare(bf_actual, bf_expected, ElementType::bf16, Tolerance::relative(1e-2, 0)).passed);
  EXPECT_NEAR(compare(bf_actual, bf_expected, ElementType::bf16, Tolerance::exact()).max_error,
              0.0078125, 1e-12);
}

TEST(Verify, UnknownBytesAndPartialElements) {
  std::vector<std::uint8_t> expected = {1, 2, 3, 4, 5, 6, 7};
  std::vector<std::uint8_t> actual = expected;
  actual[6] = 9;
  // 7 bytes as f32: one whole element and a 3-byte tail, where the difference is.
  RegionCheck check = compare(actual, expected, ElementType::f32, Tolerance::relative(1, 1));
  EXPECT_FALSE(check.passed);
  EXPECT_EQ(check.first_bad_index, 1);
  EXPECT_EQ(check.elements, 2u);
  RegionCheck bytes = compare(actual, expected, ElementType::unknown, Tolerance::exact());
  EXPECT_EQ(bytes.first_bad_index, 6);
}

TEST(Verify, SizeMismatchFails) {
  EXPECT_FALSE(
      compare(std::vector<float>{1}, std::vector<float>{1, 2}, ElementType::f32, Tolerance::exact())
          .passed);
}

}  // namespace
