// bo/: draws from the posterior of the surrogate's lengthscales (GaussianProcess::draw) and the
// acquisition averaged over them (Options::hyperparameter_draws).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "bo_support.hpp"
#include "gp.hpp"
#include "r3/bo/optimizer.hpp"

namespace {

using namespace r3::bo;
using r3::bo::test::grid;
using r3::bo::test::sample_times;
using r3::bo::test::value;

struct Spread {
  double mean = 0, sd = 0;
};
Spread log_spread(const std::vector<Hyperparameters>& draws, std::size_t dimension) {
  Spread s;
  for (const Hyperparameters& h : draws) s.mean += std::log(h.lengthscales[dimension]);
  s.mean /= static_cast<double>(draws.size());
  for (const Hyperparameters& h : draws) {
    const double d = std::log(h.lengthscales[dimension]) - s.mean;
    s.sd += d * d;
  }
  s.sd = std::sqrt(s.sd / static_cast<double>(draws.size() - 1));
  return s;
}

// The fit to `times` at `x` (warped as the optimizer warps them, with its trend) and `count`
// draws from `seed` around it.
std::pair<Hyperparameters, std::vector<Hyperparameters>> fit_and_draw(
    const std::vector<Encoded>& x, const std::vector<double>& times, const Encoder& encoder,
    std::size_t count, std::uint64_t seed) {
  const std::vector<double> warped = warp_times(times).values;
  const Eigen::VectorXd y = Eigen::Map<const Eigen::VectorXd>(warped.data(), warped.size());
  const FitSettings settings{.trend = 0.1};
  const Hyperparameters fitted = GaussianProcess::fit(x, y, encoder, settings);
  return {fitted, GaussianProcess::draw(x, y, encoder, settings, fitted, count, seed)};
}

TEST(BoGaussianProcess, LengthscaleDrawsSpreadWhereTheDataSayLittleAndStayWhereTheySayMuch) {
  // Time varies along x alone; 8 points say little about either lengthscale, 40 pin x's down.
  const Space space(
      {Parameter::ordinal("x", grid(0, 1, 51)), Parameter::ordinal("y", grid(0, 1, 51))});
  const Encoder encoder(space);
  std::mt19937_64 rng(5);
  const auto [x, times] = sample_times(space, encoder, rng, 40, [&](const Configuration& c) {
    return 2 + std::sin(6 * value(space, c, 0));
  });
  auto draws_of = [&](std::size_t points, std::size_t count, std::uint64_t seed) {
    const auto end = static_cast<long>(points);
    return fit_and_draw({x.begin(), x.begin() + end}, {times.begin(), times.begin() + end}, encoder,
                        count, seed);
  };
  const auto [fitted, draws] = draws_of(40, 32, 1);
  ASSERT_EQ(draws.size(), 32u);
  std::set<double> distinct;
  for (const Hyperparameters& h : draws) {
    // Only the lengthscales are drawn; the rest is the fit's.
    // (to the ulp: exp(log(v)) may differ from v by one)
    EXPECT_DOUBLE_EQ(h.signal_variance, fitted.signal_variance);
    EXPECT_DOUBLE_EQ(h.noise_variance, fitted.noise_variance);
    ASSERT_EQ(h.trend_weights.size(), fitted.trend_weights.size());
    for (std::size_t k = 0; k < h.trend_weights.size(); ++k)
      EXPECT_DOUBLE_EQ(h.trend_weights[k], fitted.trend_weights[k]);
    for (double l : h.lengthscales) {
      EXPECT_GE(l, 1e-2);
      EXPECT_LE(l, 20.0);
    }
    distinct.insert(h.lengthscales[0]);
  }
  EXPECT_GT(distinct.size(), 24u) << "the chain hardly moves";
  // y changes nothing: the fit put its lengthscale at the bound (irrelevant), where every draw
  // keeps it. x's lengthscale is where the fit put it, give or take.
  ASSERT_NEAR(fitted.lengthscales[1], 20.0, 1e-6);
  for (const Hyperparameters& h : draws)
    EXPECT_DOUBLE_EQ(h.lengthscales[1], fitted.lengthscales[1]);
  const Spread along = log_spread(draws, 0);
  EXPECT_LT(std::abs(along.mean - std::log(fitted.lengthscales[0])), 0.5)
      << "draws around " << std::exp(along.mean) << ", fitted " << fitted.lengthscales[0];
  // With 8 points, x's lengthscale is far less certain.
  const auto [few_fitted, few] = draws_of(8, 32, 1);
  const Spread few_along = log_spread(few, 0);
  EXPECT_GT(few_along.sd, 3 * along.sd) << "log-lengthscale spread along x: " << few_along.sd
                                        << " from 8 points, " << along.sd << " from 40";
  // A seed makes the same draws; another seed others.
  const auto [again_fitted, again] = draws_of(40, 32, 1);
  const auto [other_fitted, other] = draws_of(40, 32, 2);
  for (std::size_t k = 0; k < draws.size(); ++k) {
    EXPECT_EQ(draws[k].lengthscales, again[k].lengthscales);
  }
  EXPECT_NE(draws.back().lengthscales, other.back().lengthscales);
}

TEST(BoGaussianProcess, CategoricalWeightsAreDrawnToo) {
  // Time depends on a categorical choice (three labels) and a little on x: the draws move the
  // choice's weight within its bounds, and keep what is not drawn.
  const Space space({Parameter::ordinal("x", grid(0, 1, 21)),
                     Parameter::categorical("layout", {"rows", "columns", "tiles"})});
  const Encoder encoder(space);
  ASSERT_EQ(encoder.categorical_count(), 1u);
  std::mt19937_64 rng(9);
  const auto [x, times] = sample_times(space, encoder, rng, 12, [&](const Configuration& c) {
    const double by_layout[] = {1.0, 3.0, 2.0};
    return by_layout[c.values[1].at(0)] + 0.2 * value(space, c, 0);
  });
  const auto [fitted, draws] = fit_and_draw(x, times, encoder, 32, 3);
  ASSERT_EQ(draws.size(), 32u);
  std::set<double> distinct;
  for (const Hyperparameters& h : draws) {
    ASSERT_EQ(h.categorical_weights.size(), 1u);
    EXPECT_GE(h.categorical_weights[0], 1e-3 * (1 - 1e-9));
    EXPECT_LE(h.categorical_weights[0], 20.0 * (1 + 1e-9));
    EXPECT_TRUE(h.sequence_weights.empty());
    EXPECT_DOUBLE_EQ(h.signal_variance, fitted.signal_variance);
    EXPECT_DOUBLE_EQ(h.noise_variance, fitted.noise_variance);
    distinct.insert(h.categorical_weights[0]);
  }
  EXPECT_GT(distinct.size(), 24u) << "the categorical weight hardly moves (fitted "
                                  << fitted.categorical_weights[0] << ")";
}

// A bowl over three parameters, lowest (1) at (0.3, 0.6, 0.1).
double bowl(const Space& space, const Configuration& c) {
  const double x = value(space, c, 0), y = value(space, c, 1), z = value(space, c, 2);
  return 1 + (x - 0.3) * (x - 0.3) + (y - 0.6) * (y - 0.6) + 0.2 * (z - 0.1) * (z - 0.1);
}

TEST(BoOptimizer, ProposalsAverageOverLengthscaleDrawsUntilTheirLimitOfSuccesses) {
  const Space space({Parameter::ordinal("x", grid(0, 1, 11)),
                     Parameter::ordinal("y", grid(0, 1, 11)),
                     Parameter::ordinal("z", grid(0, 1, 11))});
  // The next proposal after `observed` evaluations, with these options.
  auto next_after = [&](Options options, std::size_t observed) {
    Optimizer optimizer(space, options);
    while (optimizer.observations().size() < observed) {
      for (const Configuration& c : optimizer.propose(1))
        optimizer.observe(c, Outcome::success(bowl(space, c)));
    }
    return optimizer.propose(1).at(0);
  };
  std::size_t differ = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    Options drawn, fitted, past, at_limit;
    drawn.seed = fitted.seed = past.seed = at_limit.seed = seed;
    drawn.initial_samples = fitted.initial_samples = past.initial_samples =
        at_limit.initial_samples = 5;
    fitted.hyperparameter_draws = 0;
    past.hyperparameter_draws_until = 4;  // the initial design's 5 successes are past it
    at_limit.hyperparameter_draws_until = 5;  // ... and at this one, still drawn
    // The initial design does not depend on the draws: the same 5 points, the same sixth
    // proposal past the limit.
    const Configuration with = next_after(drawn, 5), without = next_after(fitted, 5);
    EXPECT_EQ(next_after(past, 5).hash(), without.hash()) << "seed " << seed;
    EXPECT_EQ(next_after(at_limit, 5).hash(), with.hash()) << "seed " << seed;
    // The draws are a function of the history: an optimizer told the same history (as a
    // resumed run is) proposes the same again.
    EXPECT_EQ(next_after(drawn, 5).hash(), with.hash()) << "seed " << seed;
    differ += with.hash() == without.hash() ? 0 : 1;
    // Later, past the limit, both searches go on from their own histories (no crash, a valid
    // point): 12 successes.
    EXPECT_TRUE(space.valid(next_after(drawn, 12)));
  }
  EXPECT_GE(differ, 4u) << "the draws changed " << differ << " of 8 sixth proposals";
}

// Options::draws_for_log_ei: by default log-EI's picks are made on the fitted model alone (the
// draws are UCB's), so a log-EI search proposes the same with draws as without; told to, it
// averages over them too.
TEST(BoOptimizer, LogEiAveragesOverTheDrawsOnlyWhenToldTo) {
  const Space space({Parameter::ordinal("x", grid(0, 1, 11)),
                     Parameter::ordinal("y", grid(0, 1, 11)),
                     Parameter::ordinal("z", grid(0, 1, 11))});
  auto sixth = [&](std::uint64_t seed, std::size_t draws, bool for_log_ei) {
    Options options;
    options.seed = seed;
    options.acquisition = Acquisition::log_ei;
    options.initial_samples = 5;
    options.hyperparameter_draws = draws;
    options.draws_for_log_ei = for_log_ei;
    Optimizer optimizer(space, options);
    while (optimizer.observations().size() < 5) {
      for (const Configuration& c : optimizer.propose(1))
        optimizer.observe(c, Outcome::success(bowl(space, c)));
    }
    return optimizer.propose(1).at(0).hash();
  };
  std::size_t differ = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    const auto fitted = sixth(seed, 0, false);
    EXPECT_EQ(sixth(seed, 16, false), fitted) << "seed " << seed;
    differ += sixth(seed, 16, true) == fitted ? 0 : 1;
  }
  EXPECT_GE(differ, 4u) << "averaged over draws, log-EI changed " << differ
                        << " of 8 sixth proposals";
}

}  // namespace
