// bo/: the posterior kept between proposals (posterior.hpp) against the GP it stands for, and
// the resume guarantee it has to keep.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "gp.hpp"
#include "posterior.hpp"
#include "r3/bo/optimizer.hpp"

namespace {

using namespace r3::bo;

// Numbers, a category, and a pass sequence: every kind of kernel term.
Space mixed_space() {
  return Space(
      {Parameter::ordinal("x", {1, 2, 4, 8, 16, 32, 64}),
       Parameter::ordinal("y", {0, 1, 2, 3, 4, 5}), Parameter::categorical("mode", {"a", "b", "c"}),
       Parameter::sequence("passes", {"p0", "p1", "p2", "p3", "p4", "p5", "p6"}, 5, true)});
}

double synthetic(const Space& space, const Configuration& c) {
  double t = 1 + 0.1 * c.values[0][0] + 0.3 * std::abs(c.values[1][0] - 2) + 0.2 * c.values[2][0];
  for (int item : c.values[3]) t += item % 3 == 0 ? -0.05 : 0.04;
  (void)space;
  return std::max(t, 0.1);
}

Hyperparameters some_hyperparameters(const Encoder& encoder) {
  Hyperparameters h = Hyperparameters::defaults(encoder);
  h.signal_variance = 1.7;
  h.lengthscales = {0.3, 0.8};
  h.categorical_weights = {0.6};
  h.sequence_weights = {1.4};
  h.noise_variance = 2e-3;
  h.trend_weights = {0.4, 0.2};  // the trend's terms are in every posterior test
  return h;
}

class BoPosteriorTrend : public ::testing::TestWithParam<bool> {};

TEST_P(BoPosteriorTrend, SaysWhatTheGaussianProcessSays) {
  const Space space = mixed_space();
  const Encoder encoder(space);
  Hyperparameters h = some_hyperparameters(encoder);
  if (!GetParam()) h.trend_weights.clear();
  std::mt19937_64 rng(3);
  std::vector<Encoded> x;
  std::vector<double> y;
  Posterior posterior(h);
  for (int i = 0; i < 70; ++i) {
    const Configuration c = space.sample(rng);
    x.push_back(encoder.encode(c));
    y.push_back(std::sin(0.3 * i) + 0.1 * c.values[1][0]);
    posterior.append(x.back(), c.hash());
  }
  const GaussianProcess gp(
      x, Eigen::Map<Eigen::VectorXd>(y.data(), static_cast<Eigen::Index>(y.size())), h);
  const std::vector<double> whitened = posterior.whiten(y);
  std::vector<Encoded> points;
  std::vector<const Posterior::Column*> columns;
  for (int i = 0; i < 40; ++i) {
    const Configuration c = space.sample(rng);
    points.push_back(encoder.encode(c));
    columns.push_back(&posterior.column(points.back(), c.hash()));
  }
  Eigen::VectorXd mean, variance;
  gp.predict(points, mean, variance);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto e = static_cast<Eigen::Index>(i);
    EXPECT_NEAR(posterior.mean(*columns[i], whitened), mean(e), 1e-8) << "point " << i;
    EXPECT_NEAR(posterior.variance(*columns[i]), variance(e), 1e-8) << "point " << i;
  }
  // The mean from a point's kernel and the weights K^-1 y (what the classifier asks for).
  const std::vector<double> weights = posterior.weights(y);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const r3::Hash128 key{i + 1, 0};  // only the cache's key: any not used for another point
    EXPECT_NEAR(posterior.mean(posterior.kernel(points[i], key), weights),
                mean(static_cast<Eigen::Index>(i)), 1e-8)
        << "point " << i;
  }
  // The posterior covariance of two points: prior minus what the data explain.
  Eigen::MatrixXd v;
  gp.predict({points[0], points[1]}, mean, variance, &v);
  EXPECT_NEAR(posterior.covariance(*columns[0], *columns[1]),
              covariance(points[0], points[1], h) - v.col(0).dot(v.col(1)), 1e-8);
  // A trend adds to the prior variance away from the middle of the numeric ranges.
  EXPECT_EQ(prior_variance(points[0], h) > h.signal_variance, GetParam());
}

INSTANTIATE_TEST_SUITE_P(WithAndWithout, BoPosteriorTrend, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "trend" : "no_trend"; });

// What makes a resumed run propose bit for bit what the uninterrupted one did: a column kept
// while rows were appended is exactly the column computed afterwards in one go.
TEST(BoPosterior, AColumnKeptWhileRowsWereAddedIsTheColumnComputedAfterwards) {
  const Space space = mixed_space();
  const Encoder encoder(space);
  const Hyperparameters h = some_hyperparameters(encoder);
  std::mt19937_64 rng(5);
  std::vector<Configuration> rows;
  for (int i = 0; i < 90; ++i) rows.push_back(space.sample(rng));
  const Configuration point = space.sample(rng);
  // A row after the column is kept is the point itself: only the entries added as the column
  // is extended can find it, its nearest row.
  rows[60] = point;
  Posterior kept(h), fresh(h);
  for (int i = 0; i < 90; ++i) {
    if (i == 17) kept.column(encoder.encode(point), point.hash());
    kept.append(encoder.encode(rows[static_cast<std::size_t>(i)]),
                rows[static_cast<std::size_t>(i)].hash());
    fresh.append(encoder.encode(rows[static_cast<std::size_t>(i)]),
                 rows[static_cast<std::size_t>(i)].hash());
  }
  EXPECT_EQ(kept.cached(), fresh.cached());  // the point's column: kept, and a row's in both
  const std::size_t computed = kept.computed();
  const Posterior::Column& a = kept.column(encoder.encode(point), point.hash());
  EXPECT_EQ(kept.computed(), computed) << "the kept column was computed again";
  const Posterior::Column& b = fresh.column(encoder.encode(point), point.hash());
  ASSERT_EQ(a.v.size(), 90u);
  EXPECT_EQ(a.v, b.v);  // bit for bit
  EXPECT_EQ(a.squared, b.squared);
  // The nearest row (Options::known_correlation) over rows seen before and after it was kept.
  double nearest = 0;
  for (const Configuration& row : rows)
    nearest = std::max(nearest, correlation(encoder.encode(row), encoder.encode(point), h));
  EXPECT_EQ(nearest, 1.0);
  EXPECT_EQ(a.nearest, nearest);
  EXPECT_EQ(b.nearest, nearest);
}

// Columns computed together (four at a time where there are four, the rest alone) are those
// computed one by one, bit for bit: which way a point was first scored changes nothing.
TEST(BoPosterior, ColumnsComputedTogetherAreTheColumnsComputedAlone) {
  const Space space = mixed_space();
  const Encoder encoder(space);
  const Hyperparameters h = some_hyperparameters(encoder);
  std::mt19937_64 rng(11);
  Posterior together(h), alone(h);
  for (int i = 0; i < 75; ++i) {  // not a multiple of four rows: the dots' tails are used
    const Configuration c = space.sample(rng);
    together.append(encoder.encode(c), c.hash());
    alone.append(encoder.encode(c), c.hash());
  }
  std::vector<Encoded> points;
  std::vector<r3::Hash128> keys;
  for (int i = 0; i < 39; ++i) {  // a block of 32 and one of 7: groups of four and a remainder
    const Configuration c = space.sample(rng);
    points.push_back(encoder.encode(c));
    keys.push_back(c.hash());
  }
  const std::size_t before = together.computed();
  together.compute(points, keys);
  // (A point may repeat a row, and is kept already: a full block and a remainder are enough.)
  ASSERT_GT(together.computed() - before, 32u);
  for (std::size_t k = 0; k < points.size(); ++k) {
    const Posterior::Column& a = together.column(points[k], keys[k]);
    const Posterior::Column& b = alone.column(points[k], keys[k]);
    ASSERT_EQ(a.v.size(), 75u);
    EXPECT_EQ(a.v, b.v) << "point " << k;
    EXPECT_EQ(a.squared, b.squared) << "point " << k;
  }
  // Kept columns extended together by an appended row are those computed afterwards, alone.
  std::mt19937_64 replay(11);
  Posterior afterwards(h);
  for (int i = 0; i < 75; ++i) {
    const Configuration c = space.sample(replay);
    afterwards.append(encoder.encode(c), c.hash());
  }
  const Configuration row = space.sample(rng);
  together.append(encoder.encode(row), row.hash());
  afterwards.append(encoder.encode(row), row.hash());
  for (std::size_t k = 0; k < points.size(); ++k) {
    EXPECT_EQ(together.column(points[k], keys[k]).v, afterwards.column(points[k], keys[k]).v)
        << "point " << k;
  }
}

// Kept columns and kernels gain the rows appended since they were last asked for only when they
// are asked for again: brought up to date together with new columns, however many rows each
// lacks, they are what a posterior that kept nothing computes, bit for bit, and no kept column is
// computed again.
TEST(BoPosterior, KeptColumnsLaggingByDifferentRowsAreTheColumnsComputedAfterwards) {
  const Space space = mixed_space();
  const Encoder encoder(space);
  const Hyperparameters h = some_hyperparameters(encoder);
  std::mt19937_64 rng(23);
  std::vector<Configuration> rows;
  for (int i = 0; i < 61; ++i) rows.push_back(space.sample(rng));
  auto points_of = [&](int count) {
    std::pair<std::vector<Encoded>, std::vector<r3::Hash128>> out;
    for (int i = 0; i < count; ++i) {
      const Configuration c = space.sample(rng);
      out.first.push_back(encoder.encode(c));
      out.second.push_back(c.hash());
    }
    return out;
  };
  const auto early = points_of(37), later = points_of(9), last = points_of(14);
  Posterior lagging(h);
  auto append_rows = [&](Posterior& p, std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) p.append(encoder.encode(rows[i]), rows[i].hash());
  };
  append_rows(lagging, 0, 40);
  lagging.compute(early.first, early.second);
  for (std::size_t k = 0; k < 5; ++k) lagging.kernel(early.first[k], early.second[k]);
  append_rows(lagging, 40, 47);
  lagging.compute(later.first, later.second);
  append_rows(lagging, 47, 61);
  const std::size_t computed = lagging.computed();
  // Lagging 21 rows, 14 rows, and new: one call, as a proposal's pool does.
  std::vector<Encoded> all = early.first;
  std::vector<r3::Hash128> keys = early.second;
  all.insert(all.end(), later.first.begin(), later.first.end());
  keys.insert(keys.end(), later.second.begin(), later.second.end());
  all.insert(all.end(), last.first.begin(), last.first.end());
  keys.insert(keys.end(), last.second.begin(), last.second.end());
  lagging.compute(all, keys);
  EXPECT_LE(lagging.computed() - computed, last.first.size()) << "a kept column was computed again";
  Posterior afterwards(h);
  append_rows(afterwards, 0, 61);
  for (std::size_t k = 0; k < all.size(); ++k) {
    const Posterior::Column& a = lagging.column(all[k], keys[k]);
    const Posterior::Column& b = afterwards.column(all[k], keys[k]);
    ASSERT_EQ(a.v.size(), 61u) << "point " << k;
    EXPECT_EQ(a.v, b.v) << "point " << k;
    EXPECT_EQ(a.squared, b.squared) << "point " << k;
  }
  for (std::size_t k = 0; k < 5; ++k) {
    const Posterior::Kernel& a = lagging.kernel(early.first[k], early.second[k]);
    ASSERT_EQ(a.k.size(), 61u);
    EXPECT_EQ(a.k, afterwards.kernel(early.first[k], early.second[k]).k) << "kernel " << k;
  }
}

// Past many fit points and with a sequence parameter, the optimizer's kept columns are those of
// the uninterrupted run only: the resumed one, which starts with none, proposes the same.
TEST(BoOptimizer, AResumedRunProposesTheSameWithTheColumnsTheUninterruptedRunKept) {
  const Space space = mixed_space();
  Options options;
  options.seed = 7;
  options.random_candidates = 128;
  const std::size_t batch = 3, generations = 45, killed_after = 36;
  auto outcome = [&](const Configuration& c) {
    if (c.hash().low % 9 == 0) return Outcome::failed("compile error");
    return Outcome::success(synthetic(space, c));
  };
  Optimizer original(space, options);
  std::vector<std::vector<Configuration>> proposals;
  for (std::size_t g = 0; g < generations; ++g) {
    proposals.push_back(original.propose(batch));
    for (const Configuration& c : proposals.back()) original.observe(c, outcome(c));
  }
  Optimizer resumed(space, options);
  for (std::size_t g = 0; g < killed_after; ++g)
    for (const Configuration& c : proposals[g]) resumed.observe(c, outcome(c));
  for (std::size_t g = killed_after; g < generations; ++g) {
    const std::vector<Configuration> again = resumed.propose(batch);
    ASSERT_EQ(again, proposals[g]) << "generation " << g;
    for (const Configuration& c : again) resumed.observe(c, outcome(c));
  }
}

}  // namespace
