#include "r3/bo/optimizer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_set>

#include "gp.hpp"
#include "history.hpp"
#include "posterior.hpp"
#include "r3/bo/design.hpp"
#include "r3/bo/fit_pool.hpp"
#include "r3/bo/pairs.hpp"
#include "r3/bo/plateau.hpp"
#include "r3/elapsed.hpp"
#include "r3/error.hpp"

namespace r3::bo {

// What the optimizer keeps between proposals; all of it follows from the space and the history
// (the posteriors' kept columns only save time: posterior.hpp).
struct Optimizer::Memo {
  std::size_t gp_at = 0, classifier_at = 0;  // the fit points of the cached hyperparameters
  std::optional<Hyperparameters> gp, classifier;
  // A fit submitted to the pool (fit_ahead) for a fit point (its key). Whoever sets `claimed`
  // first does it: the pool thread that reaches the task, or the proposal that needs it before
  // then (it fits in place rather than wait behind other optimizers' fits), or a later point
  // that made it useless (then nobody does).
  struct AheadFit {
    std::shared_future<Hyperparameters> result;
    std::shared_ptr<std::atomic<bool>> claimed;
  };
  // By fit point: with a lag (Options::fit_lag) the next proposal's fit and later ones may
  // all be under way.
  std::map<std::size_t, AheadFit> gp_ahead, classifier_ahead;
  // The models conditioned on the rows chosen at the fit point and on everything after it:
  // per row, the index of its success (gp) or observation (classifier).
  std::optional<Posterior> gp_posterior, classifier_posterior;
  std::vector<std::size_t> gp_rows, classifier_rows;
  std::size_t gp_covered = 0, classifier_covered = 0;  // successes / observations conditioned on
  // The random part of the candidate pool, drawn anew at each fit point of the GP.
  std::size_t pool_at = 0;
  std::vector<Configuration> random_pool;
  std::unordered_set<Hash128> known;  // observed and pending configurations
  std::vector<Hash128> observed;      // per observation
  // Every valid configuration of a small space, and their hashes (Space::enumerate).
  bool enumerated_done = false;
  std::optional<std::vector<Configuration>> enumerated;
  std::vector<Hash128> enumerated_hashes;
  // The sizes of the history and of the pending list when a proposal found nothing to offer:
  // both only change with what is known, so until one does a proposal finds nothing again (a
  // level whose remaining points are all sure to fail is asked at every generation).
  std::optional<std::pair<std::size_t, std::size_t>> nothing_at;
};

namespace {
// Spaces up to this many points (block shapes, JIT options) are listed once and drawn from.
constexpr std::size_t kEnumerableSpace = std::size_t{1} << 15;
}  // namespace

namespace {

// log EI for minimisation, stable far into the tail (z << 0) where EI underflows.
double log_expected_improvement(double mean, double sd, double best) {
  const double z = (best - mean) / sd;
  double log_h;
  if (z > -6) {
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
    const double cdf = normal_cdf(z);
    log_h = std::log(std::max(pdf + z * cdf, 1e-300));
  } else {
    // h(z) = pdf(z) (1 - t R(t)), t = -z, R the Mills ratio: 1 - t R(t) ~ 1/t^2 - 3/t^4 + 15/t^6.
    const double t2 = z * z;
    log_h = -0.5 * t2 - 0.5 * std::log(2 * M_PI) +
            std::log(1 / t2 - 3 / (t2 * t2) + 15 / (t2 * t2 * t2));
  }
  return std::log(sd) + log_h;
}

// The observations a model is built from: all successes, their warped times (warp_times), and a
// subset of them (the best half of `limit`, the rest spread over the run) when there are too many.
struct Data {
  std::vector<std::size_t> successes;  // indices into the observations
  std::vector<double> target;          // warped time, per success
};

std::vector<std::size_t> subset(const Data& data, std::size_t limit) {
  const std::size_t n = data.successes.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (n <= limit) return order;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return data.target[a] < data.target[b]; });
  std::vector<std::size_t> chosen(order.begin(), order.begin() + static_cast<long>(limit / 2));
  std::vector<std::size_t> rest(order.begin() + static_cast<long>(limit / 2), order.end());
  std::sort(rest.begin(), rest.end());  // in the order they were observed
  const std::size_t wanted = limit - chosen.size();
  for (std::size_t k = 0; k < wanted; ++k) chosen.push_back(rest[k * rest.size() / wanted]);
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

// The observations the feasibility classifier conditions on: all of them, or (beyond `limit`)
// every failure up to half the limit, the most recent first, and successes spread over the run.
std::vector<std::size_t> classifier_rows(const std::vector<Observation>& observations,
                                         std::size_t limit) {
  std::vector<std::size_t> all(observations.size());
  std::iota(all.begin(), all.end(), 0);
  if (all.size() <= limit) return all;
  std::vector<std::size_t> failed, succeeded;
  for (std::size_t i = observations.size(); i-- > 0;) {
    (observations[i].outcome.ok ? succeeded : failed).push_back(i);
  }
  std::vector<std::size_t> rows(
      failed.begin(), failed.begin() + static_cast<long>(std::min(failed.size(), limit / 2)));
  const std::size_t wanted = limit - rows.size();
  for (std::size_t k = 0; k < wanted && k < succeeded.size(); ++k) {
    rows.push_back(succeeded[k * succeeded.size() / wanted]);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

// Candidate configurations with what the model says of them.
struct Pool {
  std::vector<Configuration> configurations;
  std::vector<const Posterior::Column*> columns;  // in the GP's posterior
  std::vector<double> mean, variance, log_feasible;
  std::vector<char> known;  // Options::known_correlation
  // Per hyperparameter draw (Options::hyperparameter_draws), per point: that draw's posterior.
  std::vector<std::vector<double>> drawn_mean, drawn_variance;
  std::unordered_set<Hash128> hashes;
  std::size_t size() const { return configurations.size(); }
};

// Hyperparameters are fitted again only when the data has grown by a sixteenth since the last fit
// (at every size up to 64), on the data as it was at that size: they are a function of the
// history alone, so a resumed run fits at the same points, to the same data, as the
// uninterrupted one. Between fits the models condition on every observation with the last
// fitted hyperparameters. This keeps a proposal's cost from growing with the history.
std::size_t fit_step(std::size_t point) {
  return point < 64 ? 1 : std::max<std::size_t>(1, point / 16);
}

std::size_t fit_point(std::size_t size) {
  std::size_t point = std::min<std::size_t>(size, 64);
  while (true) {
    const std::size_t next = point + fit_step(point);
    if (next > size) return point;
    point = next;
  }
}

// The fit point whose hyperparameters a history of `size` uses (successes for the GP,
// observations for the classifier): that of the history `lag` ago (Options::fit_lag), but never
// one before `least` (the GP needs two successes, the classifier a failure), so that the point
// never goes back as the history grows. (Past 64, fit_point() rounds down to its schedule, which
// may still fall before `least`: a classifier whose first failure came late is then fitted to
// successes alone until its next fit point, with or without a lag.)
std::size_t lagged_fit_point(std::size_t size, std::size_t lag, std::size_t least) {
  return fit_point(std::min(size, std::max(size > lag ? size - lag : 0, least)));
}

// Observations up to and including the first failure (what the classifier's fit needs).
std::size_t through_first_failure(const std::vector<Observation>& observations) {
  for (std::size_t i = 0; i < observations.size(); ++i)
    if (!observations[i].outcome.ok) return i + 1;
  return observations.size() + 1;
}

// How many of the data at a fit point the GP conditions on: with the successes that come before
// the next fit point, never more than `limit` rows (the cost of a column grows with the square of
// the rows: a proposal costs the same at 500 observations as at 5000), and at least half of them.
std::size_t rows_at_fit(std::size_t point, std::size_t limit) {
  const std::size_t later = fit_step(point) - 1;
  return std::max(limit / 2, limit > later ? limit - later : 0);
}

// Options::local_search_points for a GP of `rows` rows: no limit up to 128 rows, then the
// points whose columns cost what the option's number of points cost at 128.
std::size_t local_search_limit(std::size_t points, std::size_t rows) {
  constexpr std::size_t kFullRows = 128;
  if (points == 0 || rows <= kFullRows) return std::numeric_limits<std::size_t>::max();
  return std::max<std::size_t>(1, points * kFullRows * kFullRows / (rows * rows));
}

// Columns a posterior keeps before it starts again (each is one double per row).
constexpr std::size_t kKeptColumns = 2048;

// Brings a posterior up to the history: rows appended for `from`..`to` through `row_of`. Its
// kept columns are dropped first when extending them would cost more than computing again
// those a proposal uses.
template <typename RowOf>
void condition(Posterior& posterior, std::vector<std::size_t>& rows, std::size_t& covered,
               std::size_t to, RowOf row_of) {
  posterior.next_round();
  if ((to - covered) * 4 > posterior.rows() + 64) posterior.forget();
  if (posterior.cached() > kKeptColumns) posterior.forget_unused(2);
  if (posterior.cached() > kKeptColumns) posterior.forget();
  for (; covered < to; ++covered) {
    auto [encoded, hash] = row_of(covered);
    posterior.append(encoded, hash);
    rows.push_back(covered);
  }
}

// What a fit is given: the encoded points and their targets.
struct FitData {
  std::vector<Encoded> x;
  Eigen::VectorXd y;
  std::vector<std::size_t> inert;  // inert_inputs(), for the time model
};

// The successes as they were when there were `at` of them, their times warped alone.
Data data_then(const Data& data, const std::vector<double>& times, std::size_t at,
               const Options& options) {
  Data then;
  then.successes.assign(data.successes.begin(), data.successes.begin() + static_cast<long>(at));
  const std::vector<double> then_times(times.begin(), times.begin() + static_cast<long>(at));
  then.target = warp_times(then_times, options.rank_warp).values;
  return then;
}

FitData gp_fit_data(const Encoder& encoder, const std::vector<Observation>& observations,
                    const Data& then, const Options& options) {
  FitData fit;
  const std::vector<std::size_t> rows = subset(then, options.max_fit_points);
  fit.y.resize(static_cast<Eigen::Index>(rows.size()));
  std::vector<double> times;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Observation& observation = observations[then.successes[rows[k]]];
    fit.x.push_back(encoder.encode(observation.configuration));
    fit.y(static_cast<Eigen::Index>(k)) = then.target[rows[k]];
    times.push_back(observation.outcome.time);
  }
  fit.inert = inert_inputs(fit.x, times, options.inert_tolerance);
  return fit;
}

// The classifier's fit data from the observations as they were at its fit point (`then`) and
// the rows it conditions on (`then_rows`): labels +1/-1 around the rate observed then, on every
// (then_rows.size() / max_fit_points)-th of those rows.
FitData classifier_fit_data(const Encoder& encoder, const std::vector<Observation>& then,
                            const std::vector<std::size_t>& then_rows, const Options& options) {
  std::size_t then_successes = 0;
  for (const Observation& o : then) then_successes += o.outcome.ok ? 1 : 0;
  const double then_rate =
      (static_cast<double>(then_successes) + 1) / (static_cast<double>(then.size()) + 2);
  std::vector<std::size_t> fit_rows;
  for (std::size_t k = 0; k < then_rows.size();
       k += std::max<std::size_t>(1, then_rows.size() / options.max_fit_points)) {
    fit_rows.push_back(then_rows[k]);
  }
  FitData fit;
  fit.y.resize(static_cast<Eigen::Index>(fit_rows.size()));
  for (std::size_t k = 0; k < fit_rows.size(); ++k) {
    fit.x.push_back(encoder.encode(then[fit_rows[k]].configuration));
    fit.y(static_cast<Eigen::Index>(k)) =
        (then[fit_rows[k]].outcome.ok ? 1.0 : -1.0) - (2 * then_rate - 1);
  }
  return fit;
}

// How the time model's hyperparameters are fitted.
FitSettings gp_fit_settings(const Options& options) {
  return {.max_evaluations = options.fit_evaluations,
          .trend = options.trend,
          .lengthscale_centre = options.lengthscale_centre,
          .quadratic = options.quadratic_trend};
}

// How the feasibility classifier's are: with the stationary kernel alone. Options::trend was
// measured on the time model only (bench/bo_sim's GPU tables have no failures left once their
// constraints are known), and a label near a failure region is not a time falling along a range.
FitSettings classifier_fit_settings(const Options& options) {
  constexpr double kNoTrend = 0;
  return {.max_evaluations = options.fit_evaluations,
          .trend = kNoTrend,
          .lengthscale_centre = options.lengthscale_centre};
}

Hyperparameters fit_hyperparameters(const FitData& fit, const Encoder& encoder,
                                    const FitSettings& settings) {
  return GaussianProcess::fit(fit.x, fit.y, encoder, settings, fit.inert);
}

// Marks the fits for points before `at` as useless (a fit not started yet is then not run).
void drop_before(std::map<std::size_t, Optimizer::Memo::AheadFit>& ahead, std::size_t at) {
  for (auto it = ahead.begin(); it != ahead.end() && it->first < at;) {
    it->second.claimed->store(true);
    it = ahead.erase(it);
  }
}

// Starts on the pool the fit of the data `make_data` gives, unless `ahead` already holds one
// for `at` (then the data is not made again).
template <typename MakeData>
void start_fit(std::map<std::size_t, Optimizer::Memo::AheadFit>& ahead, std::size_t at,
               const Encoder& encoder, FitPool& pool, const FitSettings& settings,
               MakeData make_data) {
  if (ahead.contains(at)) return;
  auto promise = std::make_shared<std::promise<Hyperparameters>>();
  auto claimed = std::make_shared<std::atomic<bool>>(false);
  ahead.emplace(at, Optimizer::Memo::AheadFit{promise->get_future().share(), claimed});
  // The task owns what it reads: the data, and the encoder's dimension counts (the copy's space
  // pointer is not followed by a fit).
  pool.submit([promise, claimed, fit = make_data(), encoder, settings] {
    if (claimed->exchange(true)) return;  // fitted in place, or not needed any more
    try {
      promise->set_value(fit_hyperparameters(fit, encoder, settings));
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  });
}

// The hyperparameters at fit point `at`: from the pool's fit for it, or fitted here. Fits for
// earlier points are no longer needed (the history only grows); later ones are kept.
template <typename MakeData>
Hyperparameters fitted(std::map<std::size_t, Optimizer::Memo::AheadFit>& ahead, std::size_t at,
                       const Encoder& encoder, const FitSettings& settings, MakeData make_data) {
  drop_before(ahead, at);
  if (auto it = ahead.find(at); it != ahead.end()) {
    const Optimizer::Memo::AheadFit fit = it->second;
    ahead.erase(it);
    // Under way on a pool thread: wait for it. Still queued: fitted here, to the same data.
    if (fit.claimed->exchange(true)) return fit.result.get();
  }
  return fit_hyperparameters(make_data(), encoder, settings);
}

// What the optimiser's failures cost over its successes (Outcome::cost, mean over those that
// say), at least 1; 1 until both a failure and a success said.
// The mean cost (Outcome::cost) of the successes (`ok`) or the failures among `observations`
// that say what they cost; nullopt where none does.
std::optional<double> mean_cost(const std::vector<Observation>& observations, bool ok) {
  double sum = 0;
  std::size_t n = 0;
  for (const Observation& o : observations) {
    if (o.outcome.ok != ok || !(o.outcome.cost > 0) || !std::isfinite(o.outcome.cost)) continue;
    sum += o.outcome.cost;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}

double failure_cost_ratio(const std::vector<Observation>& observations) {
  const std::optional<double> ok = mean_cost(observations, true);
  const std::optional<double> failed = mean_cost(observations, false);
  if (!ok || !failed) return 1.0;
  return std::clamp(*failed / *ok, 1.0, 1e4);
}

// Failures that cost more than this many times the successes' mean (Outcome::cost) are costly:
// on a GPU, a candidate that lost its context (2-6 s against 10 ms).
constexpr double kCostlyFailure = 20;

// The failures since the last success (all of them, without one), and how many of those were
// costly; none costly until a success said what one costs.
struct FailureRun {
  std::size_t failures = 0, costly = 0;
};
FailureRun failures_since_success(const std::vector<Observation>& observations) {
  std::size_t after_ok = 0;
  for (std::size_t i = 0; i < observations.size(); ++i)
    if (observations[i].outcome.ok) after_ok = i + 1;
  FailureRun run;
  run.failures = observations.size() - after_ok;
  const std::optional<double> ok = mean_cost(observations, true);
  if (!ok) return run;
  const double costly = kCostlyFailure * *ok;
  run.costly = static_cast<std::size_t>(
      std::count_if(observations.begin() + static_cast<long>(after_ok), observations.end(),
                    [&](const Observation& o) {
                      return std::isfinite(o.outcome.cost) && o.outcome.cost > costly;
                    }));
  return run;
}

// Failures in a row after which an optimiser keeps one configuration in flight: it is going
// through what is left of its space, which mostly fails.
constexpr std::size_t kFailuresInARow = 8;

class Model {
 public:
  Model(const Space& space, const std::vector<Observation>& observations, const Options& options,
        Optimizer::Timing& timing, Optimizer::Memo& memo)
      : encoder_(space, options.constraint_quantities), options_(options) {
    auto start = Clock::now();
    Data data;
    for (std::size_t i = 0; i < observations.size(); ++i) {
      if (observations[i].outcome.ok) data.successes.push_back(i);
    }
    std::vector<double> times;
    for (std::size_t i : data.successes) times.push_back(observations[i].outcome.time);
    data.target = warp_times(times, options.rank_warp).values;
    best_ = *std::min_element(data.target.begin(), data.target.end());
    failure_cost_ = options.cost_aware ? failure_cost_ratio(observations) : 1.0;
    auto success_row = [&](std::size_t k) {
      const Configuration& c = observations[data.successes[k]].configuration;
      return std::pair{encoder_.encode(c), c.hash()};
    };

    const std::size_t gp_at = lagged_fit_point(data.successes.size(), options.fit_lag, 2);
    if (!memo.gp || memo.gp_at != gp_at) {
      // The data as it was when there were `gp_at` successes.
      const Data then = data_then(data, times, gp_at, options);
      memo.gp = fitted(memo.gp_ahead, gp_at, encoder_, gp_fit_settings(options),
                       [&] { return gp_fit_data(encoder_, observations, then, options); });
      memo.gp_at = gp_at;
      // The GP conditions on the subset of the data then, and on every success after it.
      memo.gp_posterior.emplace(*memo.gp);
      memo.gp_rows.clear();
      for (std::size_t k : subset(then, rows_at_fit(gp_at, options.max_gp_points))) {
        auto [encoded, hash] = success_row(k);
        memo.gp_posterior->append(encoded, hash);
        memo.gp_rows.push_back(k);
      }
      memo.gp_covered = gp_at;
    }
    timing.fit = seconds_since(start);
    start = Clock::now();
    gp_ = &*memo.gp_posterior;
    condition(*gp_, memo.gp_rows, memo.gp_covered, data.successes.size(), success_row);
    std::vector<double> y;
    for (std::size_t k : memo.gp_rows) y.push_back(data.target[k]);
    gp_whitened_ = gp_->whiten(y);
    timing.condition = seconds_since(start);
    timing.gp_rows = memo.gp_rows.size();
    if (options.hyperparameter_draws > 0 &&
        data.successes.size() <= options.hyperparameter_draws_until) {
      // Few rows (at most hyperparameter_draws_until): each draw's GP is made whole.
      std::vector<Encoded> x;
      for (std::size_t k : memo.gp_rows) x.push_back(success_row(k).first);
      const Eigen::VectorXd target =
          Eigen::Map<const Eigen::VectorXd>(y.data(), static_cast<Eigen::Index>(y.size()));
      // A function of the history, as the fit is: a resumed run draws the same.
      const std::uint64_t seed =
          options.seed ^ (0x9e3779b97f4a7c15ull * (data.successes.size() + 7));
      for (Hyperparameters& h :
           GaussianProcess::draw(x, target, encoder_, gp_fit_settings(options), *memo.gp,
                                 options.hyperparameter_draws, seed)) {
        try {
          drawn_.emplace_back(x, target, std::move(h));
        } catch (const Error&) {
          // A draw whose covariance does not factor even with jitter: the others stand.
        }
      }
    }

    // The feasibility model: a least-squares GP classifier on the observations (+1 success,
    // -1 failure, around the observed rate), with its own fitted kernel, so that it learns which
    // parameters decide failure (e.g. block sizes past a thread limit) and which do not.
    const std::size_t failures = observations.size() - data.successes.size();
    if (failures == 0) return;
    start = Clock::now();
    const double rate = (static_cast<double>(data.successes.size()) + 1) /
                        (static_cast<double>(observations.size()) + 2);
    prior_label_ = 2 * rate - 1;
    auto observation_row = [&](std::size_t i) {
      const Configuration& c = observations[i].configuration;
      return std::pair{encoder_.encode(c), c.hash()};
    };
    const std::size_t classifier_at = lagged_fit_point(observations.size(), options.fit_lag,
                                                       through_first_failure(observations));
    if (!memo.classifier || memo.classifier_at != classifier_at) {
      // As for the GP: fitted to the observations as they were at the fit point.
      const std::vector<Observation> then(observations.begin(),
                                          observations.begin() + static_cast<long>(classifier_at));
      const std::vector<std::size_t> then_rows = classifier_rows(then, options.max_fit_points * 2);
      memo.classifier =
          fitted(memo.classifier_ahead, classifier_at, encoder_, classifier_fit_settings(options),
                 [&] { return classifier_fit_data(encoder_, then, then_rows, options); });
      memo.classifier_at = classifier_at;
      memo.classifier_posterior.emplace(*memo.classifier);
      memo.classifier_rows.clear();
      for (std::size_t i : then_rows) {
        auto [encoded, hash] = observation_row(i);
        memo.classifier_posterior->append(encoded, hash);
        memo.classifier_rows.push_back(i);
      }
      memo.classifier_covered = classifier_at;
    }
    timing.fit += seconds_since(start);
    start = Clock::now();
    classifier_ = &*memo.classifier_posterior;
    condition(*classifier_, memo.classifier_rows, memo.classifier_covered, observations.size(),
              observation_row);
    std::vector<double> labels;
    for (std::size_t i : memo.classifier_rows)
      labels.push_back((observations[i].outcome.ok ? 1.0 : -1.0) - prior_label_);
    classifier_weights_ = classifier_->weights(labels);
    timing.condition += seconds_since(start);
  }

  // Adds `configurations` to the pool with their posterior and feasibility.
  void evaluate(Pool& pool, std::vector<Configuration> configurations) const {
    std::vector<Encoded> encoded;
    std::vector<Hash128> hashes;
    for (const Configuration& c : configurations) {
      encoded.push_back(encoder_.encode(c));
      hashes.push_back(c.hash());
    }
    gp_->compute(encoded, hashes);
    const std::size_t first = pool.size(), count = configurations.size();
    for (std::size_t k = 0; k < count; ++k)
      pool.columns.push_back(&gp_->column(encoded[k], hashes[k]));
    pool.mean.resize(first + count);
    const std::vector<const Posterior::Column*> added(
        pool.columns.begin() + static_cast<long>(first), pool.columns.end());
    gp_->means(added, gp_whitened_, pool.mean.data() + first);
    const std::vector<double> labels = feasibility_labels(encoded, hashes);
    pool.drawn_mean.resize(drawn_.size());
    pool.drawn_variance.resize(drawn_.size());
    for (std::size_t d = 0; d < drawn_.size(); ++d) {
      Eigen::VectorXd mean, variance;
      drawn_[d].predict(encoded, mean, variance);
      pool.drawn_mean[d].insert(pool.drawn_mean[d].end(), mean.begin(), mean.end());
      pool.drawn_variance[d].insert(pool.drawn_variance[d].end(), variance.begin(), variance.end());
    }
    for (std::size_t k = 0; k < count; ++k) {
      pool.variance.push_back(gp_->variance(*pool.columns[first + k]));
      pool.log_feasible.push_back(std::log(feasibility(labels[k])));
      pool.known.push_back(known(*pool.columns[first + k]) ? 1 : 0);
      pool.hashes.insert(hashes[k]);
      pool.configurations.push_back(std::move(configurations[k]));
    }
  }

  // The classifier's mean label of each point (only means: from the points' kernels with the
  // rows, not their columns; posterior.hpp); empty without failures.
  std::vector<double> feasibility_labels(const std::vector<Encoded>& points,
                                         const std::vector<Hash128>& hashes) const {
    if (classifier_ == nullptr) return std::vector<double>(points.size(), 0.0);
    std::vector<const Posterior::Kernel*> kernels;
    for (std::size_t k = 0; k < points.size(); ++k)
      kernels.push_back(&classifier_->kernel(points[k], hashes[k]));
    std::vector<double> labels(points.size());
    classifier_->means(kernels, classifier_weights_, labels.data());
    for (double& label : labels) label += prior_label_;
    return labels;
  }

  // P(feasible) of a point from its mean label: 1 without failures, else Phi(2.5 E[label]).
  // The probit link maps a label the classifier is sure of (E near -1 or +1) to a probability
  // near 0 or 1, one it knows nothing about (E near 0) to 1/2.
  double feasibility(double label) const {
    if (classifier_ == nullptr) return 1.0;
    return std::clamp(normal_cdf(2.5 * label), 1e-6, 1.0);
  }

  // Options::known_correlation: whether the model cannot tell a point (by its column) from one
  // it conditions on, or from one it was told of (tell()).
  bool known(const Posterior::Column& column) const {
    if (options_.known_correlation <= 0) return false;
    if (column.nearest >= options_.known_correlation) return true;
    return std::any_of(told_.begin(), told_.end(),
                       [&](const Encoded& told) { return cannot_tell_apart(column.point, told); });
  }

  // Tells the model of a point it does not condition on but that will be measured (pending, or
  // picked earlier in this batch): the points it cannot tell from that one count as known too,
  // in `pool` and in what evaluate() adds to it after. Such a point is not a row, so its
  // variant in a parameter that does not matter keeps its mean; where that mean is below the
  // best, expected improvement stays positive however small a spread the Kriging believer
  // leaves it.
  void tell(Encoded point, Pool& pool) {
    if (options_.known_correlation <= 0) return;
    for (std::size_t i = 0; i < pool.size(); ++i) {
      if (!pool.known[i] && cannot_tell_apart(pool.columns[i]->point, point)) pool.known[i] = 1;
    }
    told_.push_back(std::move(point));
  }

  // log(acquisition x P(feasible)); a point that probably fails (P < 1/2) ranks below every
  // point that probably does not. Multiplying alone is not enough: once the surrogate has found
  // the optimum, the only places left with expected improvement are those it has no times for,
  // which are exactly where everything fails. A point the model already knows
  // (Options::known_correlation) ranks below every other that probably does not fail. UCB weighs
  // the spread by `ucb_beta` (Options::ucb_beta, or handover_ucb_beta for log-EI's turn).
  //
  // Pool point i with `variance` (its variance in the fitted model, less what the batch's
  // picks took from it). With hyperparameter draws, the value is the mean over the draws of
  // each one's (of expected improvement for log-EI: the log of the mean), each draw's variance
  // shrunk by the same factor as the fitted model's; for log-EI only with draws_for_log_ei.
  double acquisition(const Pool& pool, std::size_t i, Acquisition kind, double ucb_beta,
                     double variance) const {
    auto value_of = [&](double mean, double v) {
      const double sd = std::sqrt(v);
      return kind == Acquisition::log_ei ? log_expected_improvement(mean, sd, best_)
                                         : std::sqrt(ucb_beta) * sd - mean;
    };
    double value = 0;
    // Options::draws_for_log_ei: log-EI's turns take the fitted model alone.
    if (drawn_.empty() || (kind == Acquisition::log_ei && !options_.draws_for_log_ei)) {
      value = value_of(pool.mean[i], variance);
    } else {
      // One pass, nothing allocated (this runs for every pool point): for log-EI the log of the
      // mean of exp, kept as top + log(sum of exp(v - top)) so that nothing overflows.
      const double shrink = variance / pool.variance[i];
      const auto draws = static_cast<double>(drawn_.size());
      double top = -std::numeric_limits<double>::infinity(), sum = 0;
      for (std::size_t d = 0; d < drawn_.size(); ++d) {
        const double v = value_of(pool.drawn_mean[d][i], pool.drawn_variance[d][i] * shrink);
        if (kind != Acquisition::log_ei) {
          value += v / draws;
        } else if (v == -std::numeric_limits<double>::infinity()) {
          continue;  // no improvement under this draw: adds nothing to the mean
        } else if (v > top) {
          sum = sum * std::exp(top - v) + 1;
          top = v;
        } else {
          sum += std::exp(v - top);
        }
      }
      if (kind == Acquisition::log_ei) value = top + std::log(sum / draws);
    }
    const double log_feasible = pool.log_feasible[i];
    // Per unit of expected cost (Options::cost_aware): a success costs 1, a failure
    // failure_cost_; nothing changes while failures cost what successes do.
    const double p = std::exp(log_feasible);
    const double log_cost = failure_cost_ > 1 ? std::log(p + (1 - p) * failure_cost_) : 0.0;
    return value + log_feasible - log_cost + (pool.known[i] ? kKnown : 0.0) +
           (probably_fails(pool, i) ? kProbablyFails : 0.0);
  }
  static bool probably_fails(const Pool& pool, std::size_t i) {
    return pool.log_feasible[i] < std::log(0.5);
  }
  // Whether acquisition() ranks pool point i below every point that is neither known nor
  // probably failing, whatever its value.
  static bool ranked_last(const Pool& pool, std::size_t i) {
    return pool.known[i] || probably_fails(pool, i);
  }
  static constexpr double kProbablyFails = -1e6, kKnown = -1e5;

  // Whether a point is sure to fail (Options::min_feasibility): unlikely to succeed where the
  // classifier has seen enough around it (its variance there under a quarter of its prior
  // variance). A point it knows little about stays a candidate however low the success rate so
  // far: in a space where most points fail, that alone makes every unseen point unlikely.
  bool sure_to_fail(const Configuration& c, std::optional<double> log_feasible = {}) const {
    if (classifier_ == nullptr || options_.min_feasibility <= 0) return false;
    const Encoded point = encoder_.encode(c);
    const Hash128 hash = c.hash();
    if (!log_feasible)
      log_feasible = std::log(feasibility(feasibility_labels({point}, {hash}).front()));
    // Where failures cost more than successes, a failure is as unwelcome as that many more
    // points' worth of small chances (at most an even one).
    const double threshold =
        std::max(options_.min_feasibility, std::min(0.5, options_.min_feasibility * failure_cost_));
    if (*log_feasible >= std::log(threshold)) return false;
    const Posterior::Column& column = classifier_->column(point, hash);
    return classifier_->variance(column) <
           0.25 * prior_variance(point, classifier_->hyperparameters());
  }

  const Posterior& gp() const { return *gp_; }
  double best_target() const { return best_; }  // the fastest success's warped time
  Encoded encode(const Configuration& c) const { return encoder_.encode(c); }

 private:
  // The test of known() against a point told of: a kernel correlation at least the threshold
  // (what Posterior::Column::nearest holds against the rows).
  bool cannot_tell_apart(const Encoded& a, const Encoded& b) const {
    return correlation(a, b, gp_->hyperparameters()) >= options_.known_correlation;
  }

  Encoder encoder_;
  const Options& options_;
  // In the memo: a model is the posteriors brought up to the history (column() keeps columns).
  Posterior* gp_ = nullptr;
  std::vector<double> gp_whitened_;
  double best_ = 0;
  double failure_cost_ = 1;  // a failure's cost over a success's (Options::cost_aware)
  Posterior* classifier_ = nullptr;
  std::vector<double> classifier_weights_;
  double prior_label_ = 1;
  std::vector<Encoded> told_;  // tell()
  // The time model under each hyperparameter draw (Options::hyperparameter_draws); empty past
  // hyperparameter_draws_until successes.
  std::vector<GaussianProcess> drawn_;
};

}  // namespace

Optimizer::Optimizer(Space space, Options options)
    : space_(std::move(space)), options_(std::move(options)), memo_(std::make_unique<Memo>()) {}

Optimizer::~Optimizer() = default;
Optimizer::Optimizer(Optimizer&&) noexcept = default;
Optimizer& Optimizer::operator=(Optimizer&&) noexcept = default;

void Optimizer::observe(const Configuration& configuration, const Outcome& outcome) {
  if (!space_.valid(configuration)) {
    throw Error("observe: " + space_.describe(configuration) + " is not a valid configuration");
  }
  if (outcome.ok && !(outcome.time > 0 && std::isfinite(outcome.time))) {
    throw Error("observe: a successful outcome needs a positive, finite time");
  }
  observations_.push_back({configuration, outcome});
  const Hash128 hash = configuration.hash();
  memo_->observed.push_back(hash);
  memo_->known.insert(hash);
  std::erase_if(pending_, [&](const Configuration& c) { return c.hash() == hash; });
}

void Optimizer::clear_pending() {
  pending_.clear();
  memo_->nothing_at.reset();  // the points pending before are free again
  memo_->known = std::unordered_set<Hash128>(memo_->observed.begin(), memo_->observed.end());
}

std::size_t Optimizer::pending_room() const {
  if (options_.pending_per_observation <= 0) return std::numeric_limits<std::size_t>::max();
  // Cost-aware, the room shrinks with what a proposal is expected to cost, so that one whose
  // failures are expensive (a lost GPU context) has few in flight when they come in a row.
  double expected_cost = 1;
  if (options_.cost_aware && !observations_.empty()) {
    const double failure_cost = failure_cost_ratio(observations_);
    const double ok = static_cast<double>(std::count_if(
        observations_.begin(), observations_.end(),
        [](const Observation& o) { return o.outcome.ok; }));
    const double success_rate = ok / static_cast<double>(observations_.size());
    expected_cost = success_rate + (1 - success_rate) * failure_cost;
  }
  // At least four, or the design's size where that is more: a level's first batch holds its
  // design and a few model proposals, so that levels share a batch evenly before any of them
  // has observations (with the floor at the two-point design, the compiler level took up to
  // 13 of 22 candidates from the launch level at batches of 6-8: TuneSearch tests).
  constexpr std::size_t least_room = 4;
  auto allowed = std::max({options_.initial_samples, least_room,
                           static_cast<std::size_t>(options_.pending_per_observation *
                                                    static_cast<double>(observations_.size()) /
                                                    expected_cost)});
  // One at a time after a costly failure (the next may cost as much), or many failures in a row
  // (what is left mostly fails): otherwise a burst proposed before the first of them is
  // observed (late, behind the slowest candidate in flight) fails together. On four H200s one
  // level lost 24 GPU contexts in a row that way, after 100 cheap failures in a row.
  if (failing_in_a_row()) allowed = 1;
  return allowed > pending_.size() ? allowed - pending_.size() : 0;
}

bool Optimizer::failing_in_a_row() const {
  const FailureRun run = failures_since_success(observations_);
  // Failures before the first success are a sparse space being explored, not what is left of it.
  const bool succeeded = run.failures < observations_.size();
  return (options_.cost_aware && run.costly > 0) || (succeeded && run.failures >= kFailuresInARow);
}

void Optimizer::add_pending(const Configuration& configuration) {
  if (!space_.valid(configuration)) {
    throw Error("add_pending: " + space_.describe(configuration) + " is not a valid configuration");
  }
  if (!memo_->known.insert(configuration.hash()).second) return;  // pending or observed
  pending_.push_back(configuration);
}

std::optional<Observation> Optimizer::best() const {
  const std::optional<std::size_t> best = fastest_success(observations_, observations_.size());
  if (!best) return std::nullopt;
  return observations_[*best];
}

void Optimizer::fit_ahead() {
  if (!options_.fit_pool) return;
  Memo& memo = *memo_;
  const Encoder encoder(space_, options_.constraint_quantities);
  Data data;
  std::vector<double> times;
  for (std::size_t i = 0; i < observations_.size(); ++i) {
    if (!observations_[i].outcome.ok) continue;
    data.successes.push_back(i);
    times.push_back(observations_[i].outcome.time);
  }
  if (data.successes.size() < 2) return;  // no model yet (propose() samples)
  // The fit the next proposal uses (started here when an earlier call did not), then the one
  // a proposal uses once fit_lag more observations have come.
  const std::size_t successes = data.successes.size();
  const std::size_t gp_next = lagged_fit_point(successes, options_.fit_lag, 2);
  drop_before(memo.gp_ahead, gp_next);
  for (const std::size_t at : {gp_next, fit_point(successes)}) {
    if (memo.gp && memo.gp_at == at) continue;
    start_fit(memo.gp_ahead, at, encoder, *options_.fit_pool, gp_fit_settings(options_), [&] {
      return gp_fit_data(encoder, observations_, data_then(data, times, at, options_), options_);
    });
  }
  if (successes == observations_.size()) return;  // no failures: no classifier
  const std::size_t classifier_next = lagged_fit_point(
      observations_.size(), options_.fit_lag, through_first_failure(observations_));
  drop_before(memo.classifier_ahead, classifier_next);
  for (const std::size_t at : {classifier_next, fit_point(observations_.size())}) {
    if (memo.classifier && memo.classifier_at == at) continue;
    start_fit(memo.classifier_ahead, at, encoder, *options_.fit_pool,
              classifier_fit_settings(options_), [&] {
                const std::vector<Observation> then(observations_.begin(),
                                                    observations_.begin() + static_cast<long>(at));
                return classifier_fit_data(
                    encoder, then, classifier_rows(then, options_.max_fit_points * 2), options_);
              });
  }
}

std::vector<Configuration> Optimizer::propose(std::size_t count) {
  timing_ = {};
  const std::pair<std::size_t, std::size_t> now{observations_.size(), pending_.size()};
  if (memo_->nothing_at == now) return {};
  if (options_.max_costly_failures > 0 &&
      failures_since_success(observations_).costly >= options_.max_costly_failures) {
    memo_->nothing_at = now;
    return {};
  }
  // Randomness depends on nothing but the seed and what is known: the same history gives the
  // same proposals, whether or not the run was interrupted in between.
  std::seed_seq seeds{static_cast<std::uint32_t>(options_.seed),
                      static_cast<std::uint32_t>(options_.seed >> 32),
                      static_cast<std::uint32_t>(observations_.size()),
                      static_cast<std::uint32_t>(pending_.size())};
  std::mt19937_64 rng(seeds);
  Memo& memo = *memo_;
  if (!memo.enumerated_done) {
    memo.enumerated = space_.enumerate(kEnumerableSpace);
    if (memo.enumerated)
      for (const Configuration& c : *memo.enumerated) memo.enumerated_hashes.push_back(c.hash());
    memo.enumerated_done = true;
  }
  // What is observed or pending, and what this proposal took: the known set is read, not
  // copied (a copy per proposal grew with the history: 2000 entries at 2000 observations).
  struct Taken {
    const std::unordered_set<Hash128>& known;
    std::unordered_set<Hash128> now;
    bool contains(const Hash128& h) const { return known.contains(h) || now.contains(h); }
    // Like unordered_set::insert(...).second: whether it was not there.
    bool insert(const Hash128& h) { return !known.contains(h) && now.insert(h).second; }
  } taken{memo.known, {}};
  std::vector<Configuration> chosen;
  auto take = [&](const Configuration& c) {
    if (!taken.insert(c.hash())) return false;
    chosen.push_back(c);
    return true;
  };
  // Random configurations not taken yet: from the list of a small space (exactly the free
  // ones, however few are left), else by drawing.
  // `rejected`: what the model is sure fails. Each such point costs a classifier column, so
  // after kMostRejected of them in a row the space counts as spent for this proposal.
  constexpr std::size_t kMostRejected = 256;
  auto fill_randomly = [&](const std::function<bool(const Configuration&)>& rejected) {
    std::size_t rejected_in_a_row = 0;
    auto offer = [&](const Configuration& c) {
      if (taken.contains(c.hash())) return;
      if (rejected && rejected(c)) {
        ++rejected_in_a_row;
        return;
      }
      rejected_in_a_row = 0;
      take(c);
    };
    if (memo.enumerated) {
      std::vector<std::size_t> free;
      for (std::size_t i = 0; i < memo.enumerated_hashes.size(); ++i)
        if (!taken.contains(memo.enumerated_hashes[i])) free.push_back(i);
      std::shuffle(free.begin(), free.end(), rng);
      for (std::size_t i : free) {
        if (chosen.size() >= count || rejected_in_a_row >= kMostRejected) break;
        offer((*memo.enumerated)[i]);
      }
      return;
    }
    for (int attempts = 0;
         chosen.size() < count && attempts < 20000 && rejected_in_a_row < kMostRejected;
         ++attempts)
      offer(space_.sample(rng));
  };

  // A design point that breaks a known constraint moves to the valid configuration nearest to
  // it (Space::distance_to_unit; ties drawn at random), rather than to a random one: the design
  // keeps its spread, and the points beyond a constraint land on its boundary, where a limit
  // such as threads per block often has the optimum (bench/bo_sim: PolyBench GEMM on an H100
  // within 5% / 1% in 12 / 13 evaluations instead of 13 / 14; bo/README.md). Exact over a small
  // space's list, else over the first kRepairCandidates valid configurations of kRepairDraws
  // random draws (bounded: a space the constraints leave little of is not drawn for long).
  auto nearest_valid = [&](const std::vector<double>& point, std::mt19937_64& point_rng) {
    constexpr std::size_t kRepairCandidates = 2048, kRepairDraws = 16384;
    Configuration nearest;
    double nearest_distance = std::numeric_limits<double>::infinity();
    std::size_t ties = 0;
    auto consider = [&](const Configuration& c) {
      const double distance = space_.distance_to_unit(c, point);
      if (distance > nearest_distance + 1e-12) return;
      ties = distance < nearest_distance - 1e-12 ? 1 : ties + 1;
      if (ties == 1 || std::uniform_int_distribution<std::size_t>(0, ties - 1)(point_rng) == 0)
        nearest = c;
      nearest_distance = std::min(nearest_distance, distance);
    };
    if (memo.enumerated) {
      for (const Configuration& c : *memo.enumerated) consider(c);
    } else {
      std::size_t candidates = 0;
      for (std::size_t k = 0; k < kRepairDraws && candidates < kRepairCandidates; ++k) {
        if (std::optional<Configuration> c = space_.draw(point_rng, 1)) {
          consider(*c);
          ++candidates;
        }
      }
    }
    return nearest;
  };

  // 1. The initial space-filling design, point by point across calls.
  const std::size_t used = observations_.size() + pending_.size();
  if (used < options_.initial_samples) {
    const std::size_t dimensions = space_.parameters().size();
    auto design = options_.initial_design == InitialDesign::sobol
                      ? scrambled_sobol(options_.initial_samples, dimensions, options_.seed)
                      : latin_hypercube(options_.initial_samples, dimensions, options_.seed);
    if (options_.centre_point && !design.empty()) design.front() = space_.centre_unit();
    for (std::size_t i = used; i < options_.initial_samples && chosen.size() < count; ++i) {
      std::mt19937_64 point_rng(options_.seed + 7919 * i);
      Configuration c = space_.from_unit(design[i], point_rng);
      if (!space_.valid(c)) c = nearest_valid(design[i], point_rng);
      if (!space_.valid(c) || !take(c)) {
        for (int attempts = 0; attempts < 1000 && !take(space_.sample(rng)); ++attempts) {
        }
      }
    }
  }

  // 2. The model: a GP on the successes, a feasibility model on everything.
  std::size_t successes = 0;
  for (const Observation& o : observations_) successes += o.outcome.ok ? 1 : 0;
  // Fewer than two successes give no model to fit: sample (a small space may run out here).
  if (chosen.size() < count && successes < 2) fill_randomly(nullptr);
  if (chosen.size() < count && successes >= 2) {
    Model model(space_, observations_, options_, timing_, *memo_);
    const std::size_t computed_before = model.gp().computed();
    auto start = Clock::now();
    Pool pool;
    auto fresh = [&](const Configuration& c) {
      return !taken.contains(c.hash()) && !pool.hashes.contains(c.hash());
    };
    std::vector<Configuration> candidates;
    std::unordered_set<Hash128> batch;
    auto add = [&](const Configuration& c) {
      if (fresh(c) && batch.insert(c.hash()).second) candidates.push_back(c);
    };
    // A space no larger than the pool goes in whole (drawing would mostly repeat itself).
    const bool whole_space =
        memo.enumerated && memo.enumerated->size() <= options_.random_candidates;
    if (whole_space) {
      for (const Configuration& c : *memo.enumerated) add(c);
    } else {
      // Random points drawn at the GP's fit point, which the posterior already knows, and a few
      // drawn for this proposal alone.
      if (memo.random_pool.empty() || memo.pool_at != memo.gp_at) {
        std::mt19937_64 pool_rng(options_.seed ^ (0x9e3779b97f4a7c15ull * (memo.gp_at + 1)));
        memo.random_pool.clear();
        for (std::size_t k = 0; k < options_.random_candidates; ++k)
          memo.random_pool.push_back(space_.sample(pool_rng));
        memo.pool_at = memo.gp_at;
      }
      for (const Configuration& c : memo.random_pool) add(c);
      for (std::size_t k = 0; k < options_.random_candidates / 64; ++k) add(space_.sample(rng));
    }
    // A point's neighbours (whose random items, for sequences, follow from the point and the
    // fit point): from one proposal to the next the local searches mostly meet the same points,
    // which the posterior keeps.
    auto neighbours = [&](const Configuration& c, bool every_value = false) {
      std::mt19937_64 point_rng(options_.seed ^ c.hash().low ^
                                (0x9e3779b97f4a7c15ull * memo.gp_at));
      return space_.neighbours(c, point_rng, every_value);
    };
    std::vector<std::size_t> by_time;
    for (std::size_t i = 0; i < observations_.size(); ++i) {
      if (observations_[i].outcome.ok) by_time.push_back(i);
    }
    std::stable_sort(by_time.begin(), by_time.end(), [&](std::size_t a, std::size_t b) {
      return observations_[a].outcome.time < observations_[b].outcome.time;
    });
    for (std::size_t k = 0; k < std::min(by_time.size(), options_.local_search_starts); ++k) {
      for (const Configuration& n : neighbours(observations_[by_time[k]].configuration)) add(n);
    }
    // Observations since the fastest success (the first of equals).
    const std::size_t since_best = observations_.size() - 1 - by_time.front();
    // Options::refine_stall: the best configuration's one-parameter changes ("variations"), for
    // UCB's picks, once refine_stall observations have passed without a new best and until as
    // many variations as there are parameters were picked since the best (by either turn,
    // measured or pending): a search caught in a local optimum spends that much on it, not
    // the sum of its parameters' choices. A history's count, so a resumed run does the same.
    std::unordered_set<Hash128> variations;
    std::size_t variations_left = 0;
    if (options_.refine_stall > 0 && since_best >= options_.refine_stall) {
      std::vector<Configuration> changes =
          neighbours(observations_[by_time.front()].configuration, /*every_value=*/true);
      if (changes.size() > options_.random_candidates) {  // at most a pool's worth of columns
        std::shuffle(changes.begin(), changes.end(), rng);
        changes.resize(options_.random_candidates);
      }
      for (const Configuration& n : changes) variations.insert(n.hash());
      std::size_t tried = 0;  // since the best, measured or pending
      for (std::size_t i = by_time.front() + 1; i < observations_.size(); ++i)
        tried += variations.contains(observations_[i].configuration.hash()) ? 1 : 0;
      for (const std::vector<Configuration>* list : {&pending_, &chosen})
        for (const Configuration& c : *list) tried += variations.contains(c.hash()) ? 1 : 0;
      const std::size_t allowed = space_.parameters().size();
      variations_left = tried < allowed ? allowed - tried : 0;
      if (variations_left > 0)
        for (const Configuration& n : changes) add(n);
    }
    // Options::plateau_bisection: the first probe not measured yet is the first pick (one
    // pending, or taken by this proposal's design, is waited for).
    std::optional<Configuration> probe;
    if (options_.plateau_bisection > 0) {
      for (Configuration& c : plateau_probes(space_, observations_, options_.plateau_bisection)) {
        const Hash128 hash = c.hash();
        if (!taken.contains(hash)) {
          add(c);
          probe = std::move(c);
          break;
        }
        if (std::find(memo.observed.begin(), memo.observed.end(), hash) == memo.observed.end())
          break;
      }
    }
    // Options::pair_completion: where no probe is due and refine_stall observations have passed
    // without a new best, the completions not taken yet are candidates, and the one UCB ranks
    // first is the first pick, until as many as there are parameters were taken (measured or
    // pending): a history's count, as the refinement's.
    std::unordered_set<Hash128> completions;
    if (!probe && options_.pair_completion > 0 && since_best >= options_.refine_stall) {
      std::vector<Configuration> untaken;
      std::size_t tried = 0;
      for (Configuration& c : pair_completions(space_, observations_, options_.pair_completion)) {
        if (taken.contains(c.hash()))
          ++tried;
        else
          untaken.push_back(std::move(c));
      }
      if (tried < space_.parameters().size()) {
        for (const Configuration& c : untaken) {
          completions.insert(c.hash());
          add(c);
        }
      }
    }
    // What is pending, or was taken earlier in this proposal, will be measured.
    for (const std::vector<Configuration>* list : {&pending_, &chosen}) {
      for (const Configuration& c : *list) model.tell(model.encode(c), pool);
    }
    model.evaluate(pool, std::move(candidates));
    // The first pick: the plateau probe, else the completion UCB ranks first (in the pool: the
    // local searches only append to it).
    std::optional<std::size_t> probe_at;
    for (std::size_t i = 0; probe && i < pool.size() && !probe_at; ++i)
      if (pool.configurations[i] == *probe) probe_at = i;
    std::optional<double> completion_ucb;
    for (std::size_t i = 0; !completions.empty() && i < pool.size(); ++i) {
      if (!completions.contains(pool.configurations[i].hash()) || Model::ranked_last(pool, i))
        continue;
      const double ucb =
          model.acquisition(pool, i, Acquisition::ucb, options_.ucb_beta, pool.variance[i]);
      if (!completion_ucb || ucb > *completion_ucb) {
        completion_ucb = ucb;
        probe_at = i;
      }
    }
    // The acquisition of the k-th pick of this proposal: the portfolio takes log-EI and UCB in
    // turn, by the number of configurations known before the pick (history only: resumable).
    const std::size_t known = observations_.size() + pending_.size() + chosen.size();
    auto kind = [&](std::size_t pick) {
      if (options_.acquisition != Acquisition::portfolio) return options_.acquisition;
      return (known + pick) % 2 == 0 ? Acquisition::log_ei : Acquisition::ucb;
    };
    // The pool scored by each acquisition the local search follows: the first pick's, and in a
    // portfolio the other one's too, half the starts each.
    const bool both = options_.acquisition == Acquisition::portfolio;
    std::vector<std::vector<double>> scored(both ? 2 : 1);
    auto score = [&](std::size_t from) {
      for (std::size_t k = 0; k < scored.size(); ++k) {
        scored[k].resize(pool.size());
        for (std::size_t i = from; i < pool.size(); ++i)
          scored[k][i] = model.acquisition(pool, i, kind(k), options_.ucb_beta, pool.variance[i]);
      }
    };
    score(0);

    // Local search: from the best candidates, move to the best neighbour while it improves.
    std::vector<std::vector<std::size_t>> orders(scored.size());
    for (std::size_t k = 0; k < scored.size(); ++k) {
      orders[k].resize(pool.size());
      std::iota(orders[k].begin(), orders[k].end(), 0);
      std::stable_sort(orders[k].begin(), orders[k].end(), [&](std::size_t a, std::size_t b) {
        return scored[k][a] > scored[k][b];
      });
    }
    const std::size_t starts = std::min(pool.size(), options_.local_search_starts);
    const std::size_t most_searched =
        local_search_limit(options_.local_search_points, model.gp().rows());
    std::size_t searched = 0;
    for (std::size_t s = 0; s < starts && searched < most_searched; ++s) {
      const std::size_t k = s % scored.size();
      const std::vector<double>& acquisition = scored[k];
      std::size_t current = orders[k][s / scored.size()];
      for (std::size_t step = 0; step < options_.local_search_steps && searched < most_searched;
           ++step) {
        std::vector<Configuration> next;
        std::unordered_set<Hash128> seen;
        for (Configuration& n : neighbours(pool.configurations[current])) {
          if (fresh(n) && seen.insert(n.hash()).second) next.push_back(std::move(n));
        }
        if (next.empty()) break;
        const std::size_t first = pool.size();
        searched += next.size();
        model.evaluate(pool, std::move(next));
        score(first);
        std::size_t best = first;
        for (std::size_t i = first; i < pool.size(); ++i) {
          if (acquisition[i] > acquisition[best]) best = i;
        }
        if (acquisition[best] <= acquisition[current]) break;
        current = best;
      }
    }
    // Options::handover_improvement: whether log-EI has nothing left to offer, its turns then
    // going to UCB with handover_ucb_beta (decided on the pool as scored, once per proposal).
    const std::vector<double>& log_ei_scores = scored[kind(0) == Acquisition::log_ei ? 0 : 1];
    const bool hand_over = both && !log_ei_scores.empty() && options_.handover_improvement > 0 &&
                           since_best < options_.handover_stall &&
                           *std::max_element(log_ei_scores.begin(), log_ei_scores.end()) <
                               std::log(options_.handover_improvement);
    std::vector<double>& acquisition = scored[0];
    timing_.candidates = seconds_since(start);
    timing_.pool = pool.size();
    timing_.new_points = model.gp().computed() - computed_before;

    // The batch: greedy on the acquisition; after each pick the pick is believed to take its
    // predicted value (Kriging believer), which leaves the mean as it is and shrinks the
    // variance around it by a rank-one update.
    start = Clock::now();
    const Posterior& gp = model.gp();
    std::vector<double> variance = pool.variance;
    std::vector<std::vector<double>> updates;
    std::vector<bool> picked(pool.size(), false);
    std::vector<bool> is_variation(pool.size(), false);
    for (std::size_t i = 0; i < pool.size() && variations_left > 0; ++i)
      is_variation[i] = variations.contains(pool.configurations[i].hash());
    std::unordered_set<Hash128> declined;
    const std::size_t chosen_before = chosen.size();
    // Options::exploit_successes_per_parameter: not while the mean rests on fewer successes.
    const double parameters = static_cast<double>(space_.parameters().size());
    const bool exploit_now =
        options_.exploit_predicted_improvement &&
        static_cast<double>(successes) >= options_.exploit_successes_per_parameter * parameters;
    bool rescore = true;  // after a pick was taken (a declined one changes nothing)
    while (chosen.size() < count) {
      std::optional<std::size_t> best;
      Acquisition pick_kind = kind(chosen.size() - chosen_before);
      double ucb_beta = options_.ucb_beta;
      if (hand_over && pick_kind == Acquisition::log_ei) {
        pick_kind = Acquisition::ucb;
        ucb_beta = options_.handover_ucb_beta;
      }
      // Options::refine_stall: UCB's own turn (not log-EI's handed over) takes its best
      // variation, unless each one left ranks last anyway (known, or probably failing).
      const bool refining =
          variations_left > 0 && kind(chosen.size() - chosen_before) == Acquisition::ucb;
      // Options::exploit_predicted_improvement: log-EI's own turn (handed over or not) measures
      // the configuration the surrogate's mean puts fastest, where that is faster than the best
      // measured one.
      const bool exploiting = exploit_now &&
                              kind(chosen.size() - chosen_before) == Acquisition::log_ei;
      std::optional<std::size_t> best_variation, fastest;
      for (std::size_t i = 0; i < pool.size(); ++i) {
        if (picked[i]) continue;
        if (rescore) acquisition[i] = model.acquisition(pool, i, pick_kind, ucb_beta, variance[i]);
        if (!best || acquisition[i] > acquisition[*best]) best = i;
        if (refining && is_variation[i] && !Model::ranked_last(pool, i) &&
            (!best_variation || acquisition[i] > acquisition[*best_variation]))
          best_variation = i;
        if (exploiting && !Model::ranked_last(pool, i) &&
            (!fastest || pool.mean[i] < pool.mean[*fastest]))
          fastest = i;
      }
      if (best_variation) best = best_variation;
      if (fastest && pool.mean[*fastest] < model.best_target()) best = fastest;
      if (probe_at && chosen.size() == chosen_before && !picked[*probe_at] &&
          !Model::ranked_last(pool, *probe_at))
        best = probe_at;
      rescore = false;
      if (!best) break;
      const std::size_t x = *best;
      picked[x] = true;
      if (model.sure_to_fail(pool.configurations[x], pool.log_feasible[x])) {
        declined.insert(pool.configurations[x].hash());
        continue;
      }
      take(pool.configurations[x]);
      if (is_variation[x] && variations_left > 0) --variations_left;
      rescore = true;
      if (chosen.size() == count) break;
      model.tell(pool.columns[x]->point, pool);
      std::vector<double> u(pool.size());
      const double scale = std::sqrt(variance[x] + gp.hyperparameters().noise_variance);
      for (std::size_t i = 0; i < pool.size(); ++i) {
        double covariance = gp.covariance(*pool.columns[i], *pool.columns[x]);
        for (const std::vector<double>& before : updates) covariance -= before[i] * before[x];
        u[i] = covariance / scale;
        variance[i] = std::max(variance[i] - u[i] * u[i], 1e-12);
      }
      updates.push_back(std::move(u));
    }
    timing_.select = seconds_since(start);
    // Only when the pool ran out; a space that went into the pool whole has nothing more.
    if (!whole_space)
      fill_randomly([&](const Configuration& c) {
        if (declined.contains(c.hash())) return true;
        if (!model.sure_to_fail(c)) return false;
        declined.insert(c.hash());
        return true;
      });
    timing_.declined = declined.size();
  }
  if (chosen.empty() && count > 0) memo.nothing_at = now;
  pending_.insert(pending_.end(), chosen.begin(), chosen.end());
  for (const Configuration& c : chosen) memo.known.insert(c.hash());
  return chosen;
}

}  // namespace r3::bo
