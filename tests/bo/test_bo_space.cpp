// bo/: expressions, search spaces, initial designs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <set>

#include "r3/bo/design.hpp"
#include "r3/bo/space.hpp"
#include "r3/error.hpp"

namespace {

using namespace r3::bo;

Expression::Lookup names(std::map<std::string, Value> values) {
  return [values](const std::string& name) -> std::optional<Value> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST(BoExpression, ArithmeticComparisonsAndLogic) {
  auto lookup = names({{"bx", 32.0},
                       {"by", 8.0},
                       {"bz", 4.0},
                       {"N", 1000.0},
                       {"TILE", 16.0},
                       {"compiler", std::string("clang")}});
  EXPECT_TRUE(Expression::parse("bx*by*bz <= 1024").holds(lookup));
  EXPECT_FALSE(Expression::parse("bx*by*bz < 1024").holds(lookup));
  EXPECT_FALSE(Expression::parse("N % TILE == 0").holds(lookup));  // 1000 % 16 = 8
  EXPECT_TRUE(Expression::parse("N % 8 == 0").holds(lookup));
  EXPECT_TRUE(Expression::parse("compiler == \"clang\" && (bx > 16 || by > 16)").holds(lookup));
  EXPECT_FALSE(Expression::parse("compiler != 'clang'").holds(lookup));
  EXPECT_TRUE(Expression::parse("!(bx - 2 * by * 2 != 0)").holds(lookup));
  EXPECT_EQ(std::get<double>(Expression::parse("1 + 2 * 3 - 8 / 4").evaluate(lookup)), 5.0);
  EXPECT_EQ(std::get<double>(Expression::parse("-bx + 40").evaluate(lookup)), 8.0);
}

TEST(BoExpression, MissingValuesMakeComparisonsFalse) {
  auto lookup = names({{"bx", 32.0}});
  EXPECT_FALSE(Expression::parse("unroll >= 1").holds(lookup));
  EXPECT_FALSE(Expression::parse("unroll < 1").holds(lookup));
  EXPECT_FALSE(Expression::parse("unroll == 0").holds(lookup));
  EXPECT_FALSE(Expression::parse("bx / 0 > 1").holds(lookup));
}

TEST(BoExpression, SyntaxErrorsNameTheColumn) {
  for (const char* bad : {"bx *", "(bx + 1", "bx @ 3", "'open", "bx = 3"}) {
    try {
      Expression::parse(bad);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const r3::Error& e) {
      EXPECT_NE(std::string(e.what()).find("at column"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(Expression::parse("a + b * (c - a)").names(),
            (std::vector<std::string>{"a", "b", "c", "a"}));
}

TEST(BoExpression, ComparisonsAreWhatAConjunctionAtTheTopRequires) {
  const std::vector<Expression::Comparison> found =
      Expression::parse("bx*by <= 1024 && (bk*(bm+bn)*4 <= SMEM && 2 > bz)").comparisons();
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].left.text(), "bx * by");
  EXPECT_EQ(found[0].op, "<=");
  EXPECT_EQ(found[0].right.text(), "1024");
  EXPECT_EQ(found[1].left.text(), "(bk * (bm + bn)) * 4");
  EXPECT_EQ(found[1].right.names(), (std::vector<std::string>{"SMEM"}));
  EXPECT_EQ(found[2].op, ">");
  EXPECT_EQ(found[2].right.text(), "bz");
  // A side evaluates as the text it prints, parsed again.
  auto lookup = names({{"bk", 16.0}, {"bm", 64.0}, {"bn", 32.0}});
  EXPECT_EQ(std::get<double>(found[1].left.evaluate(lookup)), 16.0 * 96 * 4);
  EXPECT_EQ(std::get<double>(Expression::parse(found[1].left.text()).evaluate(lookup)),
            16.0 * 96 * 4);
  // Alternatives, negations and plain values require no one comparison.
  for (const char* none : {"bx < 4 || by < 4", "!(bx < 4)", "bx", "bx + by"})
    EXPECT_TRUE(Expression::parse(none).comparisons().empty()) << none;
}

TEST(BoSpace, QuantitiesAreWhatConstraintsBoundOverSeveralParameters) {
  const std::vector<double> powers{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  const Space space(
      {Parameter::ordinal("bx", powers), Parameter::ordinal("by", {1, 2, 4, 8, 16, 32, 64}),
       Parameter::ordinal("tile", {8, 16, 32}), Parameter::ordinal("unroll", {1, 2, 4}),
       Parameter::categorical("compiler", {"nvrtc", "clang"})},
      {"bx * by <= 1024", "N % tile == 0", "tile * (bx + 4) * 4 <= SMEM",
       "2048 >= bx * by * unroll", "compiler == 'clang' || bx * by >= 64",
       "bx*by <= 1024 && by <= 64", "bx * by <= unroll * 512"},
      {{"N", 4096}, {"SMEM", 49152}});
  const std::vector<Quantity>& found = space.quantities();
  ASSERT_EQ(found.size(), 3u);
  // Threads per block: 1 to 1024 (the box goes to 65536; the limit cuts it).
  EXPECT_EQ(found[0].expression.text(), "bx * by");
  EXPECT_EQ(found[0].low, 1);
  EXPECT_EQ(found[0].high, 1024);
  EXPECT_TRUE(found[0].logarithmic);
  // Shared memory: a sum inside, the limit a constant; from 8 x 5 x 4 to the limit.
  EXPECT_EQ(found[1].expression.text(), "(tile * (bx + 4)) * 4");
  EXPECT_EQ(found[1].low, 160);
  EXPECT_EQ(found[1].high, 49152);
  // The limit on the left: "2048 >= q" is "q <= 2048".
  EXPECT_EQ(found[2].expression.text(), "(bx * by) * unroll");
  EXPECT_EQ(found[2].low, 1);
  EXPECT_EQ(found[2].high, 2048);
  // Left out: "N % tile" (one parameter), an alternative, "bx * by" again, and a limit that
  // depends on a parameter.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 50; ++i) {
    const Configuration c = space.sample(rng);
    const double bx = std::get<double>(*space.value(c, 0)),
                 by = std::get<double>(*space.value(c, 1));
    EXPECT_EQ(space.quantity(c, 0), bx * by);
  }
  // A fixed number ("== 256") is no input, and a quantity over one categorical parameter is
  // not a number.
  const Space fixed({Parameter::ordinal("bx", powers), Parameter::ordinal("by", powers),
                     Parameter::categorical("mode", {"a", "b"})},
                    {"bx * by == 256", "mode != 'b' || bx >= 2"});
  EXPECT_TRUE(fixed.quantities().empty());
}

// A launch and compiler space with a constraint, a constant and a conditional sequence.
Space kernel_space() {
  return Space(
      {Parameter::ordinal("bx", {32, 64, 128, 256, 512, 1024}),
       Parameter::ordinal("by", {1, 2, 4, 8, 16, 32}), Parameter::ordinal("tile", {8, 16, 32, 48}),
       Parameter::categorical("compiler", {"nvrtc", "clang"}),
       Parameter::sequence("passes", {"instcombine", "licm", "gvn", "loop-unroll"}, 3, true)
           .when("compiler == \"clang\"")},
      {"bx * by <= 1024", "N % tile == 0"}, {{"N", 4096}});
}

TEST(BoSpace, SamplesRespectConstraintsAndConditions) {
  Space space = kernel_space();
  std::mt19937_64 rng(1);
  std::set<std::string> compilers;
  for (int i = 0; i < 2000; ++i) {
    Configuration c = space.sample(rng);
    ASSERT_TRUE(space.valid(c)) << space.describe(c);
    const double bx = std::get<double>(*space.value(c, 0)),
                 by = std::get<double>(*space.value(c, 1));
    EXPECT_LE(bx * by, 1024);
    EXPECT_NE(std::get<double>(*space.value(c, 2)), 48);  // 4096 % 48 != 0
    const std::string compiler = std::get<std::string>(*space.value(c, 3));
    compilers.insert(compiler);
    EXPECT_EQ(space.value(c, 4).has_value(), compiler == "clang") << space.describe(c);
    if (compiler == "nvrtc") {
      EXPECT_TRUE(c.values[4].empty());
    }
  }
  EXPECT_EQ(compilers.size(), 2u);
}

TEST(BoSpace, ValidRefusesWhatIsNotInTheSpace) {
  Space space = kernel_space();
  std::mt19937_64 rng(2);
  Configuration c = space.sample(rng);
  Configuration wrong = c;
  wrong.values[0] = {6};  // index out of range
  EXPECT_FALSE(space.valid(wrong));
  Configuration too_many = c;
  too_many.values[0] = {5};  // bx = 1024
  too_many.values[1] = {5};  // by = 32
  EXPECT_FALSE(space.valid(too_many));
  Configuration nvrtc_with_passes = c;
  nvrtc_with_passes.values[3] = {0};
  nvrtc_with_passes.values[4] = {1, 2};
  EXPECT_FALSE(space.valid(nvrtc_with_passes));
  Configuration too_long = c;
  too_long.values[3] = {1};
  too_long.values[4] = {0, 1, 2, 3};
  EXPECT_FALSE(space.valid(too_long));
  EXPECT_FALSE(space.valid(Configuration{}));
}

// every_value: an ordinal parameter's every other value, so that all configurations that change
// one ordinal or categorical parameter are there (Options::refine_stall's).
TEST(BoSpace, NeighboursOfEveryValueChangeOneParameterToAnyOtherValue) {
  Space space({Parameter::ordinal("bx", {8, 16, 32, 64, 128}), Parameter::ordinal("by", {1, 2, 4}),
               Parameter::categorical("cache", {"L1", "shared"})},
              {"bx * by <= 128"});
  const Configuration c{{{1}, {1}, {0}}};  // bx 16, by 2, L1
  std::mt19937_64 rng(1);
  std::set<std::string> got;
  for (const Configuration& n : space.neighbours(c, rng, /*every_value=*/true))
    got.insert(space.describe(n));
  // bx 128 with by 2 breaks the constraint.
  EXPECT_EQ(got, (std::set<std::string>{"bx=8 by=2 cache=L1", "bx=32 by=2 cache=L1",
                                        "bx=64 by=2 cache=L1", "bx=16 by=1 cache=L1",
                                        "bx=16 by=4 cache=L1", "bx=16 by=2 cache=shared"}));
  EXPECT_EQ(space.neighbours(c, rng).size(), 5u) << "one step: bx 8 or 32, by 1 or 4, shared";
}

TEST(BoSpace, NeighboursAreOneStepAwayAndValid) {
  Space space = kernel_space();
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    Configuration c = space.sample(rng);
    std::vector<Configuration> neighbours = space.neighbours(c, rng);
    ASSERT_FALSE(neighbours.empty());
    std::set<r3::Hash128> distinct;
    for (const Configuration& n : neighbours) distinct.insert(n.hash());
    EXPECT_EQ(distinct.size(), neighbours.size()) << "a neighbour listed twice";
    for (const Configuration& n : neighbours) {
      EXPECT_TRUE(space.valid(n));
      EXPECT_FALSE(n == c);
      int changed = 0;
      for (std::size_t i = 0; i < 4; ++i) changed += n.values[i] != c.values[i];
      EXPECT_LE(changed, 1) << space.describe(c) << " -> " << space.describe(n);
      if (n.values[0] != c.values[0]) {
        EXPECT_EQ(std::abs(n.values[0][0] - c.values[0][0]), 1);
      }
    }
  }
}

TEST(BoSpace, SwitchingTheCompilerTurnsTheSequenceOnAndOff) {
  Space space = kernel_space();
  std::mt19937_64 rng(4);
  Configuration c;
  do c = space.sample(rng);
  while (std::get<std::string>(*space.value(c, 3)) != "clang" || c.values[4].empty());
  bool saw_nvrtc = false;
  for (const Configuration& n : space.neighbours(c, rng)) {
    if (std::get<std::string>(*space.value(n, 3)) == "nvrtc") {
      saw_nvrtc = true;
      EXPECT_TRUE(n.values[4].empty());
    }
  }
  EXPECT_TRUE(saw_nvrtc);
}

TEST(BoSpace, HugeSpacesAreSampledNotEnumerated) {
  std::vector<Parameter> parameters;
  for (int i = 0; i < 12; ++i) {
    std::string name = "p";
    name += std::to_string(i);
    parameters.push_back(Parameter::ordinal(name, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  }
  parameters.push_back(
      Parameter::sequence("passes", {"a", "b", "c", "d", "e", "f", "g", "h"}, 8, true));
  Space space(parameters, {"p0 + p1 <= 15"});
  EXPECT_GT(space.log10_size(), 19.0);
  std::mt19937_64 rng(5);
  auto start = std::chrono::steady_clock::now();
  std::set<r3::Hash128> seen;
  for (int i = 0; i < 5000; ++i) seen.insert(space.sample(rng).hash());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  EXPECT_EQ(seen.size(), 5000u);
}

// A small space is listed whole: exactly the valid configurations (constraints hold, a
// conditional parameter has a value only where active), each once; spaces with a sequence or
// past the limit are not.
TEST(BoSpace, SmallSpacesAreEnumeratedExactly) {
  Space space({Parameter::ordinal("bx", {32, 64, 128, 256, 512, 1024}),
               Parameter::ordinal("by", {1, 2, 4, 8}),
               Parameter::categorical("cache", {"default", "ca", "cg"}),
               Parameter::ordinal("level", {1, 2, 3}).when("cache != \"default\"")},
              {"bx * by <= 1024", "bx * by >= 64"});
  auto all = space.enumerate(1000);
  ASSERT_TRUE(all.has_value());
  std::size_t shapes = 0;
  for (double bx : {32, 64, 128, 256, 512, 1024})
    for (double by : {1, 2, 4, 8}) shapes += bx * by <= 1024 && bx * by >= 64;
  EXPECT_EQ(all->size(), shapes * (1 + 2 * 3));
  std::set<r3::Hash128> distinct;
  for (const Configuration& c : *all) {
    EXPECT_TRUE(space.valid(c)) << space.describe(c);
    EXPECT_TRUE(distinct.insert(c.hash()).second) << "listed twice: " << space.describe(c);
  }
  // Every valid configuration a random draw finds is listed.
  std::mt19937_64 rng(5);
  for (int i = 0; i < 500; ++i) EXPECT_TRUE(distinct.contains(space.sample(rng).hash()));
  EXPECT_FALSE(space.enumerate(100).has_value());  // 216 points
  Space with_sequence({Parameter::ordinal("x", {1, 2}), Parameter::sequence("s", {"a"}, 2, true)});
  EXPECT_FALSE(with_sequence.enumerate(1000).has_value());
}

TEST(BoSpace, UnknownNamesAndImpossibleConstraintsAreErrors) {
  EXPECT_THROW(Space({Parameter::ordinal("bx", {32})}, {"bx * by <= 1024"}), r3::Error);
  EXPECT_THROW(Space({Parameter::ordinal("a", {1}).when("b > 0"), Parameter::ordinal("b", {1})}),
               r3::Error);
  Space impossible({Parameter::ordinal("bx", {32, 64})}, {"bx > 100"});
  std::mt19937_64 rng(6);
  EXPECT_THROW(impossible.sample(rng), r3::Error);
}

TEST(BoDesign, LatinHypercubeHasOnePointPerStratum) {
  auto points = latin_hypercube(16, 5, 7);
  for (std::size_t d = 0; d < 5; ++d) {
    std::set<int> strata;
    for (const auto& p : points) {
      ASSERT_GE(p[d], 0.0);
      ASSERT_LT(p[d], 1.0);
      strata.insert(static_cast<int>(p[d] * 16));
    }
    EXPECT_EQ(strata.size(), 16u);
  }
}

TEST(BoDesign, SobolProjectionsFillEveryDyadicInterval) {
  // In each dimension the first 2^k points of a (digitally shifted) Sobol sequence fall one in
  // each interval [j / 2^k, (j + 1) / 2^k).
  for (std::uint64_t seed : {1u, 2u}) {
    auto points = scrambled_sobol(32, 8, seed);
    for (std::size_t d = 0; d < 8; ++d) {
      std::set<int> cells;
      for (const auto& p : points) cells.insert(static_cast<int>(p[d] * 32));
      EXPECT_EQ(cells.size(), 32u) << "dimension " << d;
    }
  }
  EXPECT_NE(scrambled_sobol(4, 2, 1), scrambled_sobol(4, 2, 2));  // the shift is random
}

TEST(BoDesign, FromUnitMapsCoordinatesToValues) {
  Space space({Parameter::ordinal("a", {1, 2, 3, 4}), Parameter::categorical("b", {"x", "y"})});
  std::mt19937_64 rng(1);
  Configuration low = space.from_unit({0.0, 0.0}, rng);
  Configuration high = space.from_unit({0.99, 0.99}, rng);
  EXPECT_EQ(space.describe(low), "a=1 b=x");
  EXPECT_EQ(space.describe(high), "a=4 b=y");
  EXPECT_EQ(space.describe(space.from_unit({0.5, 0.2}, rng)), "a=3 b=x");
}

// The centre of a space: the middle value of an odd number, the lower middle of an even one
// (the first of two labels), half the longest sequence; each coordinate in the middle of its
// value's stratum, so that it is as far from either neighbour's.
TEST(BoDesign, TheCentreIsTheMiddleOfEveryRange) {
  Space space({Parameter::ordinal("odd", {1, 2, 4, 8, 16}),
               Parameter::ordinal("even", {0, 32, 64, 96}),
               Parameter::categorical("two", {"x", "y"}), Parameter::categorical("one", {"z"}),
               Parameter::sequence("passes", {"p", "q"}, 4, true)});
  const std::vector<double> centre = space.centre_unit();
  ASSERT_EQ(centre.size(), 5u);
  EXPECT_DOUBLE_EQ(centre[0], 2.5 / 5);
  EXPECT_DOUBLE_EQ(centre[1], 1.5 / 4);
  EXPECT_DOUBLE_EQ(centre[2], 0.5 / 2);
  EXPECT_DOUBLE_EQ(centre[3], 0.5);
  EXPECT_DOUBLE_EQ(centre[4], 2.5 / 5);
  std::mt19937_64 rng(1);
  const Configuration c = space.from_unit(centre, rng);
  EXPECT_EQ(c.values[0], std::vector<int>{2});
  EXPECT_EQ(c.values[1], std::vector<int>{1});
  EXPECT_EQ(c.values[2], std::vector<int>{0});
  EXPECT_EQ(c.values[3], std::vector<int>{0});
  EXPECT_LE(c.values[4].size(), 2u);  // from_unit: at most that long
  EXPECT_TRUE(space.valid(c));
}

}  // namespace
