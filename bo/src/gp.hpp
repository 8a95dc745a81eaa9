// The surrogate of the search: a Gaussian process on Box-Cox-warped log(time) over mixed
// configurations. Private to libr3bo (tests include it).
#pragma once

#include <Eigen/Dense>

#include <cmath>
#include <cstdint>
#include <vector>

#include "r3/bo/space.hpp"

namespace r3::bo {

// Phi(z), the standard normal CDF: the rank warp's normal scores, expected improvement and the
// classifier's probit link.
inline double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// A configuration as the kernel sees it.
struct Encoded {
  std::vector<double> numeric;   // per ordinal parameter: position in [0, 1]; NaN inactive
  std::vector<int> categorical;  // per categorical parameter: index; -1 inactive
  std::vector<std::vector<int>> sequences;  // per sequence parameter: items
  std::vector<char> sequence_active;
  // Per sequence parameter whose pool has at most kCountedPool items: how often each item
  // occurs (the items two sequences share are then a sum of minima), padded with zeros to a
  // multiple of kCountsAlign so that the minima are taken 16 at a time; empty for larger pools.
  std::vector<std::vector<std::uint8_t>> sequence_counts;
  static constexpr std::size_t kCountedPool = 256;
  static constexpr std::size_t kCountsAlign = 16;
};

// Numeric dimensions: the ordinal parameters, then (with `quantities`) the space's constraint
// quantities (Space::quantities()), each as a position in [0, 1] of its range.
class Encoder {
 public:
  explicit Encoder(const Space& space, bool quantities = false);
  Encoded encode(const Configuration& configuration) const;
  std::size_t numeric_count() const { return numeric_.size() + quantities_; }
  // The numeric dimensions the linear trend covers: the parameters (the first ones). A
  // quantity is a product or sum of them, which their slopes already cover.
  std::size_t trend_count() const { return numeric_.size(); }
  std::size_t categorical_count() const { return categorical_.size(); }
  std::size_t sequence_count() const { return sequences_.size(); }

 private:
  const Space* space_;
  std::vector<std::size_t> numeric_, categorical_, sequences_;  // parameter indices
  std::vector<bool> logarithmic_;  // per numeric: positions on a log scale (e.g. 32..1024)
  std::size_t quantities_ = 0;     // the first this many of Space::quantities()
};

struct Hyperparameters {
  double signal_variance = 1.0;
  std::vector<double> lengthscales;         // per numeric dimension (ARD)
  std::vector<double> categorical_weights;  // per categorical dimension
  std::vector<double> sequence_weights;     // per sequence dimension
  double noise_variance = 1e-3;
  // A linear trend over the numeric positions: per numeric dimension, the prior variance of its
  // slope (empty: no trend). Tuning times often fall steadily towards one end of a range (larger
  // tiles, more work per thread); a stationary kernel reverts to the mean away from the data and
  // cannot say so, the trend can, and its variance grows towards the ends it has not seen.
  std::vector<double> trend_weights;
  // The trend's second order, over the same dimensions: this weight x (the sum over them of
  // (a - 1/2)(b - 1/2))^2, the covariance of a function quadratic in the positions (each pair's
  // product and each square, one prior variance for all); 0: none (always without a trend). A
  // kernel's time often turns on a product of parameters (threads per block are BM/TM x BN/TN):
  // what a larger TN does depends on BN, which neither the slopes nor a stationary kernel away from
  // the data can say.
  double quadratic_weight = 0;

  // `trend`: the slopes' prior variance to start from (0: no trend); `quadratic`: the quadratic
  // term's weight to start from (0, or no trend: none).
  static Hyperparameters defaults(const Encoder& encoder, double trend = 0, double quadratic = 0);
  // In log space: the signal variance, lengthscales, categorical and sequence weights, noise
  // variance, then the trend's weights and the quadratic weight where the model has them.
  std::vector<double> to_log() const;
  // The inverse of `like.to_log()` for a model with `like`'s terms (a trend, a quadratic term);
  // values of another count are refused.
  static Hyperparameters from_log(const std::vector<double>& values, const Encoder& encoder,
                                  const Hyperparameters& like);
};

// Correlation in [0, 1]: Matérn-5/2 over the numeric dimensions (a dimension active in one
// configuration and not the other counts as the largest distance), times exp(-w) for each
// categorical dimension that differs, times exp(-w * d) per sequence with d their distance.
double correlation(const Encoded& a, const Encoded& b, const Hyperparameters& h);
// The GP's covariance: signal variance x correlation + the trend's sum over numeric dimensions
// of weight x (a - 1/2)(b - 1/2) (an inactive dimension adds nothing).
double covariance(const Encoded& a, const Encoded& b, const Hyperparameters& h);
// The same covariance (to the bit), and the pair's correlation() in `correlation_out`.
double covariance(const Encoded& a, const Encoded& b, const Hyperparameters& h,
                  double& correlation_out);
double prior_variance(const Encoded& a, const Hyperparameters& h);

// The differences of every pair of a list of points, which the kernel turns into correlations
// for any hyperparameters (correlation() of the pair, to the bit): a fit evaluates the
// likelihood a hundred times on the same points.
class PairTable {
 public:
  explicit PairTable(const std::vector<Encoded>& x);
  std::size_t size() const { return size_; }  // points
  // The pair (i, j), j < i, is number i (i - 1) / 2 + j.
  double correlation(std::size_t pair, const Hyperparameters& h) const;
  // covariance() and prior_variance() of the pair and of a point, to the bit.
  double covariance(std::size_t pair, const Hyperparameters& h) const;
  double prior_variance(std::size_t point, const Hyperparameters& h) const;

 private:
  std::size_t size_ = 0, numeric_count_ = 0, categorical_count_ = 0, sequence_count_ = 0;
  std::vector<double> numeric_differences_;  // per pair, per numeric dimension
  std::vector<std::uint8_t> differs_;        // per pair, per categorical dimension
  std::vector<double> distances_;            // per pair, per sequence
  std::vector<double> products_;             // per pair, per numeric dimension: the trend's product
  std::vector<double> self_products_;        // per point, per numeric dimension
};

// Distance of two sequences in [0, 1]: 1 - (items equal at the same position + items they
// share, counted with multiplicity) / (2 * the longer length).
double sequence_distance(const std::vector<int>& a, const std::vector<int>& b);

// The regression target for a list of positive times: the Box-Cox transform of time / fastest,
// (r^lambda - 1) / lambda (log r at lambda = 0), standardised to zero mean and unit variance.
// lambda is the maximum of the Box-Cox profile likelihood over [-1, 0] in steps of 0.05, so log
// time is the model whenever the log times look normal. Tuning times are skewed far to the slow
// side (a bad block shape can be 30x slower); lambda < 0 compresses that tail, so that the
// kernel's length scales describe the fast region rather than the distance to the slowest.
// With `rank_half` > 0 the target blends that with the times' normal scores (the standard normal
// quantiles of their ranks, ties sharing one), weighing the scores n / (n + rank_half) for n
// times, and is standardised again. Box-Cox keeps the magnitudes that matter early (a shape 30x
// slower); near the optimum the times differ by a percent or two, which a transform of the
// magnitudes squeezes together and the GP then takes for noise, while their ranks stay as far
// apart as any others (Options::rank_warp).
struct WarpedTimes {
  std::vector<double> values;  // per time, in order
  double lambda = 0;
};
WarpedTimes warp_times(const std::vector<double>& times, double rank_half = 0);

// The centre of the lengthscales' log-normal prior for `dimensions` numeric dimensions (positions
// in [0, 1]): sqrt(dimensions), the prior growing with the dimension as in Hvarfner, Hellsten and
// Nardi, "Vanilla Bayesian optimization performs great in high dimensions" (ICML 2024). With
// few observations a fit cannot tell a parameter that does not matter (a register limit, a
// cache switch) from one it has not yet seen vary, and a short centre makes it take each value
// of such a parameter for a function of its own; and in d dimensions the distance between
// random points grows as sqrt(d), so a fixed centre leaves the model less to say between its
// observations the more parameters there are. The feasibility classifier's fit has the same
// prior (Options::lengthscale_centre has the measurements).
double default_lengthscale_centre(std::size_t dimensions);

// How much log posterior GaussianProcess::fit gives up to make an inert input irrelevant.
inline constexpr double kInertNats = 1.0;

// The inputs (numeric, then categorical) that look inert in the points `x` measured at `times`:
// among the best quarter of the points (at least two), some pairs differ in that input alone,
// and every such pair's times are within `tolerance` (relative) of each other. A register
// limit above what a kernel uses, or a cache switch it does not touch, changes nothing; the
// fit cannot tell that from a lengthscale of its own until it has seen many such pairs.
std::vector<std::size_t> inert_inputs(const std::vector<Encoded>& x,
                                      const std::vector<double>& times, double tolerance);

// How GaussianProcess::fit searches: one set per model (the time model's, the classifier's).
struct FitSettings {
  int max_evaluations = 150;  // log marginal likelihood evaluations
  // The prior variance the slopes' variances are centred on; 0: no trend.
  double trend = 0;
  // The centre of the lengthscales' prior; 0: default_lengthscale_centre() of the encoder's
  // numeric dimensions.
  double lengthscale_centre = 0;
  // The value the trend's quadratic term's weight is centred on; 0: none.
  double quadratic = 0;
};

class GaussianProcess {
 public:
  // `y` is standardised (zero mean, unit variance); the prior mean is 0.
  GaussianProcess(std::vector<Encoded> x, Eigen::VectorXd y, Hyperparameters h);

  // Maximises the log marginal likelihood plus weak log-normal priors, from the defaults
  // (deterministic for given data), as `settings` say (FitSettings); with a trend the slopes'
  // variances are fitted too.
  //
  // `inert`: inputs (numeric first, then categorical, as in Hyperparameters) that the data
  // suggest have no effect (inert_inputs()). Each in turn is made irrelevant (its lengthscale at
  // the upper bound, or its categorical weight at the lower) where that costs the fit at most
  // kInertNats of log posterior against the unconstrained fit.
  static Hyperparameters fit(const std::vector<Encoded>& x, const Eigen::VectorXd& y,
                             const Encoder& encoder, const FitSettings& settings = {},
                             const std::vector<std::size_t>& inert = {});
  static double log_marginal_likelihood(const std::vector<Encoded>& x, const Eigen::VectorXd& y,
                                        const Hyperparameters& h);

  // `count` draws from the posterior of the lengthscales and categorical / sequence weights given
  // the data (the fit's priors and bounds), the other hyperparameters (signal, noise, trend)
  // kept as `fitted` has them, as are the inputs the fit left at a bound (inert ones, and any the
  // data push to the box's edge: drawing those too changed no bo_sim figure). Elliptical
  // slice sampling (Murray, Adams and MacKay 2010) in log space, where the priors are normal:
  // no step size to tune, every step a valid point. Starts at `fitted`; deterministic for a
  // given seed. With a handful of observations the maximum is one guess among many that fit
  // as well: Options::hyperparameter_draws averages the acquisition over these instead.
  static std::vector<Hyperparameters> draw(const std::vector<Encoded>& x, const Eigen::VectorXd& y,
                                           const Encoder& encoder, const FitSettings& settings,
                                           const Hyperparameters& fitted, std::size_t count,
                                           std::uint64_t seed);

  const Hyperparameters& hyperparameters() const { return h_; }
  std::size_t size() const { return x_.size(); }
  const std::vector<Encoded>& points() const { return x_; }

  // Posterior mean and variance at `points`; with `v`, also L^-1 k(X, points) (n x m), which
  // the batch selection uses for posterior covariances.
  void predict(const std::vector<Encoded>& points, Eigen::VectorXd& mean, Eigen::VectorXd& variance,
               Eigen::MatrixXd* v = nullptr) const;

 private:
  std::vector<Encoded> x_;
  Eigen::VectorXd y_;
  Hyperparameters h_;
  Eigen::LLT<Eigen::MatrixXd> cholesky_;
  Eigen::VectorXd alpha_;  // K^-1 y
};

}  // namespace r3::bo
