// Wall-clock helpers of the job: how long since, and times as the log prints them.
#pragma once

#include <time.h>

#include <chrono>
#include <sstream>
#include <string>

#include "r3/elapsed.hpp"

namespace r3::tune {

using r3::Clock;
using r3::seconds_since;

// CPU time of the calling thread, in seconds.
inline double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Wall time and this thread's CPU time since it was started. Where rank 0 shares its cores
// (ranks oversubscribed on a workstation) the wall time of its work includes the time others had
// the core; its CPU time is the work itself.
class Stopwatch {
 public:
  Stopwatch() : wall_(Clock::now()), cpu_(thread_cpu_seconds()) {}
  double wall() const { return seconds_since(wall_); }
  double cpu() const { return thread_cpu_seconds() - cpu_; }

 private:
  Clock::time_point wall_;
  double cpu_;
};

// "0.431", "12.35": milliseconds, four significant digits, three below 10 ms.
inline std::string in_ms(double seconds) {
  std::ostringstream out;
  out.precision(seconds * 1e3 < 10 ? 3 : 4);
  out << seconds * 1e3;
  return out.str();
}

// "0.431 ms", "12.35 ms".
inline std::string format_ms(double seconds) { return in_ms(seconds) + " ms"; }

}  // namespace r3::tune
