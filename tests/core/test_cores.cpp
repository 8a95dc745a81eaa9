#include "r3/cores.hpp"

#include <sched.h>

#include <gtest/gtest.h>

namespace {

// Restricts the calling thread to the first `count` cores of its mask for the test's length.
class BoundTo {
 public:
  explicit BoundTo(int count) {
    CPU_ZERO(&saved_);
    EXPECT_EQ(::sched_getaffinity(0, sizeof(saved_), &saved_), 0);
    cpu_set_t narrower;
    CPU_ZERO(&narrower);
    for (int cpu = 0, taken = 0; cpu < CPU_SETSIZE && taken < count; ++cpu)
      if (CPU_ISSET(cpu, &saved_)) CPU_SET(cpu, &narrower), ++taken;
    EXPECT_EQ(::sched_setaffinity(0, sizeof(narrower), &narrower), 0);
  }
  ~BoundTo() { ::sched_setaffinity(0, sizeof(saved_), &saved_); }

 private:
  cpu_set_t saved_;
};

int cores_in_mask() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(::sched_getaffinity(0, sizeof(set), &set), 0);
  return CPU_COUNT(&set);
}

TEST(Cores, UsableCoresAreTheAffinityMasks) {
  EXPECT_EQ(r3::usable_cores(), static_cast<std::size_t>(cores_in_mask()));
  const BoundTo one(1);
  EXPECT_EQ(r3::usable_cores(), 1u);
}

TEST(Cores, SpareCoresLeaveTheCallersOneAndStayWithinTheLimit) {
  {
    const BoundTo one(1);
    EXPECT_EQ(r3::spare_cores(4), 0u) << "a single core has none to spare";
  }
  if (cores_in_mask() < 2) GTEST_SKIP() << "this machine lets the test run on one core only";
  const BoundTo two(2);
  EXPECT_EQ(r3::spare_cores(4), 1u);
  EXPECT_EQ(r3::spare_cores(0), 0u);
}

}  // namespace
