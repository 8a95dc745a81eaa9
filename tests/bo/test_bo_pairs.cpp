// bo/src/pairs.cpp: the configurations that make two near one-parameter changes of the best at
// once, and the optimizer's first pick among them (Options::pair_completion).
#include <gtest/gtest.h>

#include <vector>

#include "r3/bo/optimizer.hpp"
#include "r3/bo/pairs.hpp"

namespace {

using namespace r3::bo;

// A tile (4 values), its depth (3), a padding switch; tile * depth at most 2048.
Space tiles() {
  return Space({Parameter::ordinal("tile", {16, 32, 64, 128}),
                Parameter::ordinal("depth", {8, 16, 32}), Parameter::ordinal("pad", {0, 1})},
               {"tile * depth <= 2048"});
}

Configuration at(int tile, int depth, int pad) { return Configuration{{{tile}, {depth}, {pad}}}; }

Observation measured(const Configuration& c, double time) {
  return Observation{c, Outcome::success(time)};
}

// The best (64, 8, pad 0), its depth 32 (16% slower) and its padding (7% slower): their
// completion is depth 32 with padding. A change of two parameters at once is no variation.
TEST(BoPairs, TwoNearChangesOfTheBestInDifferentParametersAreCompleted) {
  const std::vector<Observation> history{
      measured(at(0, 0, 0), 5.0), measured(at(2, 0, 0), 1.0), measured(at(2, 2, 0), 1.16),
      measured(at(2, 1, 1), 1.01), measured(at(2, 0, 1), 1.07)};
  EXPECT_EQ(pair_completions(tiles(), history, 0.2), std::vector<Configuration>{at(2, 2, 1)});
}

// A variation slower than the tolerance allows makes none; two variations of one parameter
// (depths 16 and 32) make none with each other; a failure is no variation.
TEST(BoPairs, OnlyVariationsWithinTheToleranceOfDifferentParametersPair) {
  std::vector<Observation> history{measured(at(2, 0, 0), 1.0), measured(at(2, 2, 0), 1.16),
                                   measured(at(2, 1, 0), 1.02),
                                   {at(3, 0, 0), Outcome::failed("launch")},
                                   measured(at(2, 0, 1), 1.25)};
  EXPECT_TRUE(pair_completions(tiles(), history, 0.2).empty());
  EXPECT_EQ(pair_completions(tiles(), history, 0.3),
            (std::vector<Configuration>{at(2, 2, 1), at(2, 1, 1)}))
      << "in the order of the later variation, then the earlier";
}

// A completion the constraints forbid (tile 128 with depth 32: 4096) is left out; one already
// measured stays in the list (the optimizer counts it as tried).
TEST(BoPairs, ACompletionOutsideTheSpaceIsLeftOutAndAMeasuredOneKept) {
  const std::vector<Observation> history{
      measured(at(2, 0, 0), 1.0), measured(at(3, 0, 0), 1.1), measured(at(2, 2, 0), 1.1),
      measured(at(2, 0, 1), 1.1), measured(at(2, 2, 1), 1.3)};
  EXPECT_EQ(pair_completions(tiles(), history, 0.2),
            (std::vector<Configuration>{at(3, 0, 1), at(2, 2, 1)}))
      << "(3, 2, 0) breaks tile * depth <= 2048";
  EXPECT_TRUE(pair_completions(tiles(), {}, 0.2).empty());
  EXPECT_TRUE(pair_completions(tiles(), {{at(2, 0, 0), Outcome::failed("x")}}, 0.2).empty());
}

// The optimizer, three observations after the best (the refinement's stall), proposes the
// completion first: a smooth model adds the two slowdowns and would go elsewhere.
TEST(BoPairs, AfterTheStallTheFirstPickCompletesTwoNearChanges) {
  const Space space = tiles();
  const std::vector<Observation> history{
      measured(at(2, 0, 0), 1.0),  measured(at(2, 2, 0), 1.16), measured(at(2, 0, 1), 1.07),
      measured(at(0, 2, 1), 4.0),  measured(at(1, 1, 0), 2.0),  measured(at(3, 1, 1), 1.6),
      measured(at(0, 0, 0), 3.5)};
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto first_pick = [&](double tolerance) {
      Options options;
      options.seed = seed;
      options.pair_completion = tolerance;
      Optimizer optimizer(space, options);
      for (const Observation& o : history) optimizer.observe(o.configuration, o.outcome);
      return space.describe(optimizer.propose(1).at(0));
    };
    EXPECT_EQ(first_pick(0.2), "tile=64 depth=32 pad=1");
    EXPECT_NE(first_pick(0), "tile=64 depth=32 pad=1") << "the model took it itself: the test "
                                                          "tells nothing";
  }
}

}  // namespace
