// The CUDA recorder's tables: which allocation an address falls in, and each recorded launch's
// time in the application from the application's own launches.
#include <gtest/gtest.h>

#include <map>

#include "allocations.hpp"
#include "app_times.hpp"

namespace r3::record::cuda {
namespace {

TEST(RecorderAllocations, AnAddressFallsInTheLiveAllocationThatHoldsIt) {
  Allocations a;
  a.add(0x1000, 0x100);
  a.add(0x2000, 0x10);
  a.add_managed(0x9000, 0x1000);
  EXPECT_EQ(a.containing(0x1000), (Allocations::Range{0x1000, 0x100}));
  EXPECT_EQ(a.containing(0x10ff), (Allocations::Range{0x1000, 0x100}));
  EXPECT_FALSE(a.containing(0x1100)) << "one past the end";
  EXPECT_FALSE(a.containing(0xfff));
  EXPECT_EQ(a.containing(0x2004), (Allocations::Range{0x2000, 0x10}));
  EXPECT_FALSE(a.containing(0x9010)) << "managed memory is not a recorded allocation";
  EXPECT_TRUE(a.is_managed(0x9010));
  EXPECT_FALSE(a.is_managed(0x1010));
  a.remove(0x1000);
  a.remove(0x9000);
  EXPECT_FALSE(a.containing(0x1010));
  EXPECT_FALSE(a.is_managed(0x9010));
  EXPECT_EQ(a.live().size(), 1u);
}

AppLaunch launch(std::uint32_t grid, double us, std::uint32_t correlation) {
  return {capture::Dim3{grid, 1, 1}, capture::Dim3{128, 1, 1}, us, correlation};
}

TEST(RecorderAppTimes, ARecordedLaunchGetsTheMedianOfTheApplicationsOtherLaunchesOfItsShape) {
  AppTimes times;
  times.time("k");
  times.add("k", launch(64, 10, 1));
  times.add("k", launch(64, 30, 2));
  times.add("k", launch(64, 20, 3));
  times.add("k", launch(64, 500, 7));    // the recorded launch itself: after the recorder's copies
  times.add("k", launch(32, 1, 4));      // another shape
  times.add("other", launch(64, 1, 5));  // not a timed kernel
  WrittenLaunch w;
  w.name = "k";
  w.correlation = 7;
  w.launch.grid = {64, 1, 1};
  w.launch.block = {128, 1, 1};
  times.written(w);
  WrittenLaunch alone = w;  // a shape launched only once: its own time
  alone.launch.grid = {16, 1, 1};
  alone.correlation = 9;
  times.written(alone);
  times.add("k", launch(16, 42, 9));
  WrittenLaunch untimed = w;
  untimed.name = "other";
  times.written(untimed);

  std::map<std::uint32_t, double> set;
  EXPECT_EQ(times.apply([&](const WrittenLaunch& l) {
    set[l.launch.grid.x + (l.name == "other" ? 1000 : 0)] = *l.launch.app_time_us;
    return true;
  }),
            2u);
  EXPECT_EQ(set.at(64), 20.0);
  EXPECT_EQ(set.at(16), 42.0);
  EXPECT_FALSE(set.contains(1064)) << "a kernel that was not timed keeps no samples";
  EXPECT_EQ(times.apply([](const WrittenLaunch&) { return false; }), 0u);
}

}  // namespace
}  // namespace r3::record::cuda
