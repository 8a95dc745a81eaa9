// Comparing a region after a replayed launch with what the recorded launch left there.
#pragma once

#include <span>
#include <string>

#include "r3/replay/backend.hpp"

namespace r3::replay {

// Element by element: bitwise, or |actual - expected| <= atol + rtol * |expected| for floating
// point (NaN matches NaN). Fills every field of RegionCheck but name, address and
// expected_to_change.
// With `before` (what the region held before the launch), also counts the elements the recorded
// launch changed and those of them the candidate left as they were (RegionCheck::changed,
// left_unchanged), and fails more than 1% of them left alone.
RegionCheck compare_region(std::span<const std::byte> actual, std::span<const std::byte> expected,
                           capture::ElementType type, const replay::Tolerance& tolerance,
                           std::span<const std::byte> before = {});

// Whether a candidate left too many of the elements the recorded launch changed as they were.
inline bool left_work_undone(const RegionCheck& check) {
  return check.left_unchanged > 0 && check.left_unchanged * 100 > check.changed;
}

std::string describe(const replay::Tolerance& tolerance);

}  // namespace r3::replay
