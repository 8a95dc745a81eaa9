#include "r3/duration.hpp"

#include <gtest/gtest.h>

namespace {

using r3::format_duration;
using r3::parse_duration;

TEST(Durations, ParseUnitsAndCombinations) {
  EXPECT_EQ(parse_duration("90"), 90.0);
  EXPECT_EQ(parse_duration("90s"), 90.0);
  EXPECT_EQ(parse_duration("1.5m"), 90.0);
  EXPECT_EQ(parse_duration("2h"), 7200.0);
  EXPECT_EQ(parse_duration("1h30m"), 5400.0);
  EXPECT_EQ(parse_duration("250ms"), 0.25);
  EXPECT_EQ(parse_duration("1d"), 86400.0);
  for (const char* bad :
       {"", "h", "1x", "-5", "1h 30m", "5 s", "1h30", "s5", "99999999999999999999d"}) {
    EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
  }
}

TEST(Durations, FormatReadsBack) {
  EXPECT_EQ(format_duration(5400), "1h30m");
  EXPECT_EQ(format_duration(3600), "1h");
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(0.25), "0.25s");
  EXPECT_EQ(format_duration(1234567.5), "1234567.5s");
  for (double seconds : {1.0, 59.0, 61.0, 3599.0, 86400.0, 0.5, 12.5, 1234567.5, 1e-7, 0.1}) {
    EXPECT_EQ(parse_duration(format_duration(seconds)), seconds) << seconds;
  }
}

}  // namespace
