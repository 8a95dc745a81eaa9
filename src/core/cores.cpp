#include "r3/cores.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace r3 {

std::size_t usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<std::size_t>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::size_t spare_cores(std::size_t limit) { return std::min(limit, usable_cores() - 1); }

}  // namespace r3
