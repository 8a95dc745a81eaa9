// Wall-clock helpers of the job: how long since, and times as the log prints them.
#pragma once

#include <chrono>
#include <sstream>
#include <string>

namespace r3::tune {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// "0.431 ms", "12.35 ms": four significant digits, three below 10 ms.
inline std::string format_ms(double seconds) {
  std::ostringstream out;
  out.precision(seconds * 1e3 < 10 ? 3 : 4);
  out << seconds * 1e3 << " ms";
  return out.str();
}

}  // namespace r3::tune
