// Comparing a region after a replayed launch with what the recorded launch left there.
#pragma once

#include <span>
#include <string>

#include "r3/replay/backend.hpp"

namespace r3::replay {

// Element by element: bitwise, or |actual - expected| <= atol + rtol * |expected| for floating
// point (NaN matches NaN). Fills every field of RegionCheck but name, address and
// expected_to_change.
RegionCheck compare_region(std::span<const std::byte> actual, std::span<const std::byte> expected,
                           capture::ElementType type, const config::Tolerance& tolerance);

std::string describe(const config::Tolerance& tolerance);

}  // namespace r3::replay
