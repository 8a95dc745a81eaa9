// Elapsed wall time, the one way r3 measures it (a monotonic clock: never the wall clock, which
// NTP may step back).
#pragma once

#include <chrono>

namespace r3 {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace r3
