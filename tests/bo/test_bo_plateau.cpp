// bo/src/plateau.cpp: the configurations that bisect along the latest step on a plateau.
#include <gtest/gtest.h>

#include <vector>

#include "r3/bo/plateau.hpp"

namespace {

using namespace r3::bo;

// Block shapes of PolyBench SYR2K's table (bench/data): x, y powers of two, at most 1024
// threads, a cache switch.
Space shapes() {
  std::vector<double> powers;
  for (int v = 1; v <= 1024; v *= 2) powers.push_back(v);
  return Space({Parameter::ordinal("x", powers), Parameter::ordinal("y", powers),
                Parameter::categorical("cache", {"ca", "cg"})},
               {"x * y <= 1024"});
}

// x = 2^i, y = 2^j.
Configuration shape(int i, int j, int cache = 0) { return Configuration{{{i}, {j}, {cache}}}; }

Observation measured(const Configuration& c, double time) {
  return Observation{c, Outcome::success(time)};
}

std::vector<Configuration> probes(const std::vector<Observation>& history) {
  return plateau_probes(shapes(), history, 0.005);
}

// A new best 0.1% faster than the one before (y 128 -> 64 at x = 8): half the way down to
// y = 1 (no value measured below), y = 8; back past y = 128 would leave the space (x * y).
TEST(BoPlateau, ANewBestByLessThanTheToleranceIsBisectedOnwards) {
  const std::vector<Observation> history{measured(shape(0, 0), 9), measured(shape(3, 7), 1.0207),
                                         measured(shape(3, 6), 1.0197)};
  EXPECT_EQ(probes(history), std::vector<Configuration>{shape(3, 3)});
  // By 1%, a step down the slope: left to the model.
  std::vector<Observation> steep = history;
  steep[1].outcome.time = 1.03;
  EXPECT_TRUE(probes(steep).empty());
  EXPECT_FALSE(plateau_probes(shapes(), steep, 0.02).empty()) << "within a 2% tolerance";
}

// The bisection stops at the nearest value measured on the line (y = 4 at x = 8, cache ca), not
// at one measured off it (y = 2 with the other cache setting).
TEST(BoPlateau, TheBisectionEndsAtTheNearestValueMeasuredOnTheLine) {
  const std::vector<Observation> history{measured(shape(3, 1, 1), 3.0), measured(shape(3, 2), 2.6),
                                         measured(shape(3, 7), 1.0207),
                                         measured(shape(3, 6), 1.0197)};
  EXPECT_EQ(probes(history), std::vector<Configuration>{shape(3, 4)});
}

// A later measurement within the tolerance of the best that did not beat it is a step too (at x
// = 4: y 64, the best, then y 32, 0.2% slower; y 1 measured first, 2.6x): onwards from the
// best away from it, half the way to the largest y the threads allow (256), then back past y 32
// half the way to y 1. Without that later step the best before the best is 2.6x: no plateau.
TEST(BoPlateau, ALaterStepThatDidNotBeatTheBestIsBisectedBothWays) {
  std::vector<Observation> history{measured(shape(2, 0), 2.6), measured(shape(2, 6), 1.0197),
                                   measured(shape(2, 5), 1.0216)};
  EXPECT_EQ(probes(history), (std::vector<Configuration>{shape(2, 8), shape(2, 2)}));
  history.back().outcome.time = 1.04;
  EXPECT_TRUE(probes(history).empty());
}

// Both ordinal parameters of a step move, each half the way to its own end; a step that moved
// only the categorical switch, a failure, or a history of one success give nothing.
TEST(BoPlateau, EveryOrdinalParameterOfTheStepMovesAndNothingElseDoes) {
  const std::vector<Observation> diagonal{measured(shape(2, 6), 1.004), measured(shape(3, 5), 1.0)};
  // Onwards, x: 8 -> half the way to 1024 (index 3 -> 7), y: 32 -> half the way to 1 (5 -> 2):
  // 128 x 4; back, x: 4 -> 2, y: 64 -> 256.
  EXPECT_EQ(probes(diagonal), (std::vector<Configuration>{shape(7, 2), shape(1, 8)}));
  const std::vector<Observation> switched{measured(shape(3, 6, 1), 1.002),
                                          measured(shape(3, 6, 0), 1.0)};
  EXPECT_TRUE(probes(switched).empty());
  const std::vector<Observation> failed{measured(shape(3, 6), 1.0),
                                        Observation{shape(3, 5), Outcome::failed("timeout")}};
  EXPECT_TRUE(probes(failed).empty());
  EXPECT_TRUE(probes({measured(shape(3, 6), 1.0)}).empty());
  EXPECT_TRUE(probes({}).empty());
}

}  // namespace
