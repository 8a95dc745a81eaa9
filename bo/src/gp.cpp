#include "gp.hpp"

#include <nlopt.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <random>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "r3/error.hpp"

namespace r3::bo {

Encoder::Encoder(const Space& space, bool quantities)
    : space_(&space), quantities_(quantities ? space.quantities().size() : 0) {
  const auto& parameters = space.parameters();
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const Parameter& p = parameters[i];
    switch (p.kind) {
      case Kind::ordinal: {
        numeric_.push_back(i);
        const double low = p.numbers.front(), high = p.numbers.back();
        logarithmic_.push_back(low > 0 && high / low >= 8);
        break;
      }
      case Kind::categorical:
        categorical_.push_back(i);
        break;
      case Kind::sequence:
        sequences_.push_back(i);
        break;
    }
  }
}

Encoded Encoder::encode(const Configuration& c) const {
  Encoded e;
  const auto& parameters = space_->parameters();
  for (std::size_t k = 0; k < numeric_.size(); ++k) {
    const std::size_t i = numeric_[k];
    const Parameter& p = parameters[i];
    if (c.values[i].empty()) {
      e.numeric.push_back(std::numeric_limits<double>::quiet_NaN());
      continue;
    }
    const double value = p.numbers[static_cast<std::size_t>(c.values[i][0])];
    const double low = p.numbers.front(), high = p.numbers.back();
    double position = 0;
    if (high > low) {
      position = logarithmic_[k] ? std::log(value / low) / std::log(high / low)
                                 : (value - low) / (high - low);
    }
    e.numeric.push_back(position);
  }
  for (std::size_t k = 0; k < quantities_; ++k) {
    const Quantity& q = space_->quantities()[k];
    const double value = space_->quantity(c, k);  // NaN: inactive, as for a parameter
    e.numeric.push_back(q.logarithmic ? (std::log1p(value) - std::log1p(q.low)) /
                                            (std::log1p(q.high) - std::log1p(q.low))
                                      : (value - q.low) / (q.high - q.low));
  }
  for (std::size_t i : categorical_)
    e.categorical.push_back(c.values[i].empty() ? -1 : c.values[i][0]);
  for (std::size_t i : sequences_) {
    const Parameter& p = parameters[i];
    std::vector<std::uint8_t> counts;
    if (p.pool.size() <= Encoded::kCountedPool && p.max_length < 256) {
      const std::size_t align = Encoded::kCountsAlign;
      counts.assign((p.pool.size() + align - 1) / align * align, 0);
      for (int item : c.values[i]) ++counts[static_cast<std::size_t>(item)];
    }
    e.sequence_counts.push_back(std::move(counts));
    e.sequences.push_back(c.values[i]);
    e.sequence_active.push_back(space_->value(c, i).has_value() ? 1 : 0);
  }
  return e;
}

Hyperparameters Hyperparameters::defaults(const Encoder& encoder, double trend, double quadratic) {
  Hyperparameters h;
  h.lengthscales.assign(encoder.numeric_count(), 0.5);
  h.categorical_weights.assign(encoder.categorical_count(), 1.0);
  h.sequence_weights.assign(encoder.sequence_count(), 1.0);
  if (trend > 0) h.trend_weights.assign(encoder.trend_count(), trend);
  if (trend > 0 && quadratic > 0) h.quadratic_weight = quadratic;  // the trend's second order
  return h;
}

std::vector<double> Hyperparameters::to_log() const {
  std::vector<double> out{std::log(signal_variance)};
  for (double v : lengthscales) out.push_back(std::log(v));
  for (double v : categorical_weights) out.push_back(std::log(v));
  for (double v : sequence_weights) out.push_back(std::log(v));
  out.push_back(std::log(noise_variance));
  for (double v : trend_weights) out.push_back(std::log(v));
  if (quadratic_weight > 0) out.push_back(std::log(quadratic_weight));
  return out;
}

Hyperparameters Hyperparameters::from_log(const std::vector<double>& values, const Encoder& encoder,
                                          const Hyperparameters& like) {
  const std::size_t expected = 2 + encoder.numeric_count() + encoder.categorical_count() +
                               encoder.sequence_count() + like.trend_weights.size() +
                               (like.quadratic_weight > 0 ? 1 : 0);
  if (values.size() != expected)
    throw Error("hyperparameters: " + std::to_string(values.size()) + " values for a model of " +
                std::to_string(expected) + " (" + std::to_string(like.trend_weights.size()) +
                " trend weights" + (like.quadratic_weight > 0 ? ", a quadratic weight)" : ")"));
  Hyperparameters h;
  std::size_t k = 0;
  h.signal_variance = std::exp(values[k++]);
  for (std::size_t i = 0; i < encoder.numeric_count(); ++i)
    h.lengthscales.push_back(std::exp(values[k++]));
  for (std::size_t i = 0; i < encoder.categorical_count(); ++i) {
    h.categorical_weights.push_back(std::exp(values[k++]));
  }
  for (std::size_t i = 0; i < encoder.sequence_count(); ++i) {
    h.sequence_weights.push_back(std::exp(values[k++]));
  }
  h.noise_variance = std::exp(values[k++]);
  for (std::size_t i = 0; i < like.trend_weights.size(); ++i)
    h.trend_weights.push_back(std::exp(values[k++]));
  if (like.quadratic_weight > 0) h.quadratic_weight = std::exp(values[k++]);
  return h;
}

namespace {
// How many items `a` and `b` have in common, as multisets. Pass sequences are short: a bit mask
// of `a`'s items already matched does it without allocating (the GP evaluates this for every
// pair of points, millions of times per proposal at hundreds of observations).
std::size_t shared_items(const std::vector<int>& a, const std::vector<int>& b) {
  std::size_t shared = 0;
  if (a.size() <= 64) {
    std::uint64_t used = 0;
    for (int item : b) {
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i] == item && !(used >> i & 1u)) {
          used |= std::uint64_t{1} << i;
          ++shared;
          break;
        }
      }
    }
    return shared;
  }
  std::vector<int> x = a, y = b;
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  for (std::size_t i = 0, j = 0; i < x.size() && j < y.size();) {
    if (x[i] == y[j]) ++shared, ++i, ++j;
    else if (x[i] < y[j]) ++i;
    else ++j;
  }
  return shared;
}
}  // namespace

namespace {
// The same from the items' counts (Encoded::sequence_counts: a multiple of 16 long). The
// kernel takes this for every pair of points: 16 minima and their sum are two SSE2 instructions.
std::size_t shared_items(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
#if defined(__SSE2__)
  __m128i sum = _mm_setzero_si128();
  for (std::size_t i = 0; i < a.size(); i += Encoded::kCountsAlign) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.data() + i));
    const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.data() + i));
    sum = _mm_add_epi64(sum, _mm_sad_epu8(_mm_min_epu8(x, y), _mm_setzero_si128()));
  }
  return static_cast<std::size_t>(_mm_cvtsi128_si64(sum) +
                                  _mm_cvtsi128_si64(_mm_unpackhi_epi64(sum, sum)));
#else
  unsigned shared = 0;
  for (std::size_t i = 0; i < a.size(); ++i) shared += std::min(a[i], b[i]);
  return shared;
#endif
}

inline double distance_of(const std::vector<int>& a, const std::vector<int>& b,
                          std::size_t shared) {
  const std::size_t longer = std::max(a.size(), b.size());
  if (longer == 0) return 0;
  std::size_t same_position = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) same_position += a[i] == b[i];
  return 1.0 - static_cast<double>(same_position + shared) / (2.0 * static_cast<double>(longer));
}
}  // namespace

double sequence_distance(const std::vector<int>& a, const std::vector<int>& b) {
  return distance_of(a, b, shared_items(a, b));
}

namespace {

// What the kernel makes of a pair's differences, whoever computed them: `numeric(d)` the
// difference in numeric dimension d (1 where one side is inactive), `differs(d)` whether
// categorical dimension d differs, `distance(d)` sequence d's distance. One copy of the
// arithmetic, so that correlation() and a fit's pair table give the same bits.
template <typename Numeric, typename Differs, typename Distance>
inline double kernel_of(const Hyperparameters& h, Numeric numeric, Differs differs,
                        Distance distance) {
  double r2 = 0;
  for (std::size_t d = 0; d < h.lengthscales.size(); ++d) {
    const double scaled = numeric(d) / h.lengthscales[d];
    r2 += scaled * scaled;
  }
  const double r = std::sqrt(5.0 * r2);
  double exponent = r;  // one exp for the Matern term and the others
  for (std::size_t d = 0; d < h.categorical_weights.size(); ++d) {
    if (differs(d)) exponent += h.categorical_weights[d];
  }
  for (std::size_t d = 0; d < h.sequence_weights.size(); ++d)
    exponent += h.sequence_weights[d] * distance(d);
  return (1.0 + r + r * r / 3.0) * std::exp(-exponent);
}

double numeric_difference(const Encoded& a, const Encoded& b, std::size_t d) {
  const double x = a.numeric[d], y = b.numeric[d];
  const bool x_on = !std::isnan(x), y_on = !std::isnan(y);
  if (x_on && y_on) return x - y;
  return x_on != y_on ? 1.0 : 0.0;
}

double sequence_distance_of(const Encoded& a, const Encoded& b, std::size_t d) {
  if (a.sequence_active[d] != b.sequence_active[d]) return 1;
  if (!a.sequence_active[d]) return 0;
  if (!a.sequence_counts[d].empty()) {
    return distance_of(a.sequences[d], b.sequences[d],
                       shared_items(a.sequence_counts[d], b.sequence_counts[d]));
  }
  return sequence_distance(a.sequences[d], b.sequences[d]);
}

}  // namespace

double correlation(const Encoded& a, const Encoded& b, const Hyperparameters& h) {
  return kernel_of(
      h, [&](std::size_t d) { return numeric_difference(a, b, d); },
      [&](std::size_t d) { return a.categorical[d] != b.categorical[d]; },
      [&](std::size_t d) { return sequence_distance_of(a, b, d); });
}

namespace {
double centred_product(const Encoded& a, const Encoded& b, std::size_t d) {
  const double x = a.numeric[d], y = b.numeric[d];
  return std::isnan(x) || std::isnan(y) ? 0.0 : (x - 0.5) * (y - 0.5);
}

// The trend's share of a covariance (its slopes and its quadratic term), from the pair's
// centred products over the trend's dimensions.
template <typename Product>
double trend_of(const Hyperparameters& h, Product product) {
  double linear = 0, sum = 0;
  for (std::size_t d = 0; d < h.trend_weights.size(); ++d) {
    const double p = product(d);
    linear += h.trend_weights[d] * p;
    sum += p;
  }
  return linear + h.quadratic_weight * sum * sum;
}
}  // namespace

double covariance(const Encoded& a, const Encoded& b, const Hyperparameters& h,
                  double& correlation_out) {
  correlation_out = correlation(a, b, h);
  return h.signal_variance * correlation_out +
         trend_of(h, [&](std::size_t d) { return centred_product(a, b, d); });
}

double covariance(const Encoded& a, const Encoded& b, const Hyperparameters& h) {
  double unused = 0;
  return covariance(a, b, h, unused);
}

double prior_variance(const Encoded& a, const Hyperparameters& h) {
  return h.signal_variance + trend_of(h, [&](std::size_t d) { return centred_product(a, a, d); });
}

PairTable::PairTable(const std::vector<Encoded>& x) : size_(x.size()) {
  if (!x.empty()) {
    numeric_count_ = x[0].numeric.size();
    categorical_count_ = x[0].categorical.size();
    sequence_count_ = x[0].sequences.size();
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      for (std::size_t d = 0; d < numeric_count_; ++d)
        numeric_differences_.push_back(numeric_difference(x[i], x[j], d));
      for (std::size_t d = 0; d < categorical_count_; ++d)
        differs_.push_back(x[i].categorical[d] != x[j].categorical[d] ? 1 : 0);
      for (std::size_t d = 0; d < sequence_count_; ++d)
        distances_.push_back(sequence_distance_of(x[i], x[j], d));
      for (std::size_t d = 0; d < numeric_count_; ++d)
        products_.push_back(centred_product(x[i], x[j], d));
    }
    for (std::size_t d = 0; d < numeric_count_; ++d)
      self_products_.push_back(centred_product(x[i], x[i], d));
  }
}

double PairTable::covariance(std::size_t pair, const Hyperparameters& h) const {
  const double* p = products_.data() + pair * numeric_count_;
  return h.signal_variance * correlation(pair, h) +
         trend_of(h, [&](std::size_t d) { return p[d]; });
}

double PairTable::prior_variance(std::size_t point, const Hyperparameters& h) const {
  const double* p = self_products_.data() + point * numeric_count_;
  return h.signal_variance + trend_of(h, [&](std::size_t d) { return p[d]; });
}

double PairTable::correlation(std::size_t pair, const Hyperparameters& h) const {
  const double* n = numeric_differences_.data() + pair * numeric_count_;
  const std::uint8_t* c = differs_.data() + pair * categorical_count_;
  const double* s = distances_.data() + pair * sequence_count_;
  return kernel_of(
      h, [&](std::size_t d) { return n[d]; }, [&](std::size_t d) { return c[d] != 0; },
      [&](std::size_t d) { return s[d]; });
}

namespace {

// z with Phi(z) = q, for q in (0, 1), by bisection on normal_cdf (to 1e-12: 45 halvings of
// [-9, 9]).
double normal_quantile(double q) {
  double low = -9, high = 9;
  for (int step = 0; step < 45; ++step) {
    const double middle = 0.5 * (low + high);
    (normal_cdf(middle) < q ? low : high) = middle;
  }
  return 0.5 * (low + high);
}

// To zero mean and unit variance (left centred where the values are all equal); returns the
// variance they had.
double standardise_in_place(std::vector<double>& values) {
  double mean = 0, variance = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(values.size());
  for (double v : values) variance += (v - mean) * (v - mean);
  variance /= static_cast<double>(values.size());
  const double sd = variance > 1e-24 ? std::sqrt(variance) : 1.0;
  for (double& v : values) v = (v - mean) / sd;
  return variance;
}

// The normal scores of `times`: Phi^-1((rank + 1/2) / n), equal times sharing their mean rank.
std::vector<double> normal_scores(const std::vector<double>& times) {
  const std::size_t n = times.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return times[a] < times[b]; });
  std::vector<double> scores(n);
  for (std::size_t first = 0; first < n;) {
    std::size_t last = first;
    while (last + 1 < n && times[order[last + 1]] == times[order[first]]) ++last;
    const double rank = 0.5 * static_cast<double>(first + last);
    const double score = normal_quantile((rank + 0.5) / static_cast<double>(n));
    for (std::size_t k = first; k <= last; ++k) scores[order[k]] = score;
    first = last + 1;
  }
  return scores;
}

}  // namespace

WarpedTimes warp_times(const std::vector<double>& times, double rank_half) {
  const std::size_t n = times.size();
  WarpedTimes out;
  if (n == 0) return out;
  // Relative to the fastest time, so that lambda does not depend on the unit of time.
  std::vector<double> logs;
  for (double t : times) logs.push_back(std::log(t));
  const double fastest = *std::min_element(logs.begin(), logs.end());
  for (double& l : logs) l -= fastest;
  auto transform = [](double log_ratio, double lambda) {
    return std::abs(lambda) < 1e-12 ? log_ratio : std::expm1(lambda * log_ratio) / lambda;
  };
  auto standardise = [&](double lambda, std::vector<double>& values) {
    values.clear();
    for (double l : logs) values.push_back(transform(l, lambda));
    return standardise_in_place(values);
  };
  double sum_of_logs = 0;
  for (double l : logs) sum_of_logs += l;
  double best = -std::numeric_limits<double>::infinity();
  std::vector<double> values;
  for (int step = 0; step <= 20; ++step) {
    const double lambda = -0.05 * step;
    const double variance = standardise(lambda, values);
    if (variance <= 1e-24) break;  // all times equal: any lambda, keep log
    // Profile log-likelihood of the Box-Cox model, up to a constant.
    const double likelihood =
        -0.5 * static_cast<double>(n) * std::log(variance) + (lambda - 1) * sum_of_logs;
    if (likelihood > best) {
      best = likelihood;
      out.lambda = lambda;
    }
  }
  standardise(out.lambda, out.values);
  if (rank_half > 0 && n > 1) {
    std::vector<double> scores = normal_scores(times);
    standardise_in_place(scores);
    const double weight = static_cast<double>(n) / (static_cast<double>(n) + rank_half);
    for (std::size_t i = 0; i < n; ++i)
      out.values[i] = weight * scores[i] + (1 - weight) * out.values[i];
    standardise_in_place(out.values);
  }
  return out;
}

namespace {

Eigen::MatrixXd covariance(const PairTable& pairs, const Hyperparameters& h) {
  const Eigen::Index n = static_cast<Eigen::Index>(pairs.size());
  Eigen::MatrixXd k(n, n);
  std::size_t pair = 0;  // the table's order: (1,0), (2,0), (2,1), (3,0), ...
  for (Eigen::Index i = 0; i < n; ++i) {
    k(i, i) = pairs.prior_variance(static_cast<std::size_t>(i), h) + h.noise_variance;
    for (Eigen::Index j = 0; j < i; ++j) {
      k(i, j) = k(j, i) = pairs.covariance(pair++, h);
    }
  }
  return k;
}

double log_marginal_likelihood_of(const PairTable& pairs, const Eigen::VectorXd& y,
                                  const Hyperparameters& h) {
  Eigen::LLT<Eigen::MatrixXd> llt(covariance(pairs, h));
  if (llt.info() != Eigen::Success) return -1e30;
  const Eigen::VectorXd alpha = llt.solve(y);
  const double log_det = 2.0 * llt.matrixLLT().diagonal().array().log().sum();
  return -0.5 * y.dot(alpha) - 0.5 * log_det -
         0.5 * static_cast<double>(y.size()) * std::log(2 * M_PI);
}

// The centre `settings` give the lengthscales' prior: theirs, or the default for the encoder.
double lengthscale_centre_of(const FitSettings& settings, const Encoder& encoder) {
  return settings.lengthscale_centre > 0 ? settings.lengthscale_centre
                                         : default_lengthscale_centre(encoder.numeric_count());
}

// Weak log-normal priors that keep the fit away from degenerate corners with little data; the
// lengthscales' centred on lengthscale_centre_of() the settings. Normal in log space: per log
// value, in to_log()'s order, for a model with `like`'s terms.
struct NormalPrior {
  double mean, sd;
};
std::vector<NormalPrior> log_priors(const Encoder& encoder, const Hyperparameters& like,
                                    const FitSettings& settings) {
  const double lengthscale_centre = lengthscale_centre_of(settings, encoder);
  std::vector<NormalPrior> priors{{0.0, 1.5}};  // signal variance
  for (std::size_t i = 0; i < encoder.numeric_count(); ++i)
    priors.push_back({std::log(lengthscale_centre), 1.5});
  for (std::size_t i = 0; i < encoder.categorical_count() + encoder.sequence_count(); ++i)
    priors.push_back({0.0, 1.5});
  priors.push_back({std::log(1e-3), 2.5});  // noise variance
  for (std::size_t i = 0; i < like.trend_weights.size(); ++i)
    priors.push_back({std::log(settings.trend), 2.0});
  if (like.quadratic_weight > 0) priors.push_back({std::log(settings.quadratic), 2.0});
  return priors;
}

double log_prior(const std::vector<double>& log_values, const std::vector<NormalPrior>& priors) {
  double total = 0;
  for (std::size_t k = 0; k < log_values.size(); ++k) {
    const double z = (log_values[k] - priors[k].mean) / priors[k].sd;
    total -= 0.5 * z * z;
  }
  return total;
}

// The fit's box in log space, in to_log()'s order.
struct LogBounds {
  std::vector<double> lower, upper;
};
LogBounds log_bounds(const Encoder& encoder, const Hyperparameters& like) {
  LogBounds b;
  auto add = [&](double lower, double upper) {
    b.lower.push_back(std::log(lower));
    b.upper.push_back(std::log(upper));
  };
  add(1e-2, 50.0);  // signal variance (y is standardised)
  for (std::size_t i = 0; i < encoder.numeric_count(); ++i) add(1e-2, 20.0);
  for (std::size_t i = 0; i < encoder.categorical_count() + encoder.sequence_count(); ++i)
    add(1e-3, 20.0);
  add(1e-6, 1.0);                                                 // noise variance
  for (std::size_t i = 0; i < like.trend_weights.size(); ++i) add(1e-5, 10.0);  // the slopes'
  if (like.quadratic_weight > 0) add(1e-5, 10.0);
  return b;
}

struct FitProblem {
  const PairTable* pairs;
  const Eigen::VectorXd* y;
  const Encoder* encoder;
  const Hyperparameters* like;  // the model's terms
  std::vector<NormalPrior> priors;
};

double objective(unsigned n, const double* values, double* gradient, void* data) {
  (void)gradient;  // derivative-free method
  const auto* problem = static_cast<const FitProblem*>(data);
  std::vector<double> log_values(values, values + n);
  try {
    Hyperparameters h = Hyperparameters::from_log(log_values, *problem->encoder, *problem->like);
    return log_marginal_likelihood_of(*problem->pairs, *problem->y, h) +
           log_prior(log_values, problem->priors);
  } catch (...) {  // never let an exception cross NLopt's C frames
    return -1e30;
  }
}

}  // namespace

double GaussianProcess::log_marginal_likelihood(const std::vector<Encoded>& x,
                                                const Eigen::VectorXd& y,
                                                const Hyperparameters& h) {
  return log_marginal_likelihood_of(PairTable(x), y, h);
}

std::vector<std::size_t> inert_inputs(const std::vector<Encoded>& x,
                                      const std::vector<double>& times, double tolerance) {
  if (x.size() < 2 || tolerance <= 0) return {};
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return times[a] < times[b]; });
  order.resize(std::min(x.size(), x.size() / 4 + 1));
  const std::size_t numeric = x[0].numeric.size(), categorical = x[0].categorical.size();
  // Per input: 0 no lone pair, 1 every lone pair within tolerance, 2 one beyond it.
  std::vector<int> verdict(numeric + categorical, 0);
  for (std::size_t a = 0; a < order.size(); ++a) {
    for (std::size_t b = 0; b < a; ++b) {
      const Encoded &p = x[order[a]], &q = x[order[b]];
      std::size_t differing = 0, input = 0;
      for (std::size_t d = 0; d < numeric; ++d)
        if (numeric_difference(p, q, d) != 0) ++differing, input = d;
      for (std::size_t d = 0; d < categorical; ++d)
        if (p.categorical[d] != q.categorical[d]) ++differing, input = numeric + d;
      for (std::size_t d = 0; d < p.sequences.size(); ++d)
        if (p.sequence_active[d] != q.sequence_active[d] || p.sequences[d] != q.sequences[d])
          differing += 2;  // never a lone change of an input the check covers
      if (differing != 1) continue;
      const double ta = times[order[a]], tb = times[order[b]];
      const bool within = std::abs(ta - tb) <= tolerance * std::min(ta, tb);
      verdict[input] = std::max(verdict[input], within ? 1 : 2);
    }
  }
  std::vector<std::size_t> inert;
  for (std::size_t d = 0; d < verdict.size(); ++d)
    if (verdict[d] == 1) inert.push_back(d);
  return inert;
}

double default_lengthscale_centre(std::size_t dimensions) {
  return std::sqrt(static_cast<double>(std::max<std::size_t>(dimensions, 1)));
}

Hyperparameters GaussianProcess::fit(const std::vector<Encoded>& x, const Eigen::VectorXd& y,
                                     const Encoder& encoder, const FitSettings& settings,
                                     const std::vector<std::size_t>& inert) {
  Hyperparameters start = Hyperparameters::defaults(encoder, settings.trend, settings.quadratic);
  std::vector<double> values = start.to_log();
  const unsigned n = static_cast<unsigned>(values.size());
  const LogBounds bounds = log_bounds(encoder, start);
  const std::vector<double>&lower = bounds.lower, &upper = bounds.upper;

  nlopt_opt optimiser = nlopt_create(NLOPT_LN_BOBYQA, n);
  if (optimiser == nullptr) throw Error("NLopt could not create a BOBYQA optimiser");
  // The pairs' differences do not depend on the hyperparameters: taken once for every
  // likelihood evaluation of the fit.
  const PairTable pairs(x);
  FitProblem problem{&pairs, &y, &encoder, &start, log_priors(encoder, start, settings)};
  nlopt_set_lower_bounds(optimiser, lower.data());
  nlopt_set_upper_bounds(optimiser, upper.data());
  nlopt_set_max_objective(optimiser, objective, &problem);
  nlopt_set_maxeval(optimiser, settings.max_evaluations);
  nlopt_set_xtol_rel(optimiser, 1e-4);
  double best = 0;
  nlopt_result result = nlopt_optimize(optimiser, values.data(), &best);
  nlopt_destroy(optimiser);
  if (result < 0) return start;  // a failed fit keeps the defaults rather than stopping the search
  // Each inert input in turn at its irrelevant bound, kept where the fit loses little by it;
  // measured against the unconstrained fit, so that the losses do not add up past the limit.
  const double unconstrained = best;
  for (const std::size_t input : inert) {
    const std::size_t slot = 1 + input;  // after the signal variance
    if (input >= encoder.numeric_count() + encoder.categorical_count()) continue;
    std::vector<double> trial = values;
    trial[slot] = input < encoder.numeric_count() ? upper[slot] : lower[slot];
    const double value = objective(n, trial.data(), nullptr, &problem);
    if (value >= unconstrained - kInertNats) values = std::move(trial);
  }
  return Hyperparameters::from_log(values, encoder, start);
}

std::vector<Hyperparameters> GaussianProcess::draw(const std::vector<Encoded>& x,
                                                   const Eigen::VectorXd& y, const Encoder& encoder,
                                                   const FitSettings& settings,
                                                   const Hyperparameters& fitted, std::size_t count,
                                                   std::uint64_t seed) {
  std::vector<double> current = fitted.to_log();
  const std::size_t n = current.size();
  const LogBounds bounds = log_bounds(encoder, fitted);
  const std::vector<NormalPrior> priors = log_priors(encoder, fitted, settings);
  // What is drawn: the lengthscales and weights (after the signal variance), each unless the
  // fit left it at a bound (an inert input made irrelevant, or one the data push past the box).
  const std::size_t first = 1, last = 1 + encoder.numeric_count() + encoder.categorical_count() +
                                      encoder.sequence_count();
  std::vector<char> drawn(n, 0);
  for (std::size_t k = first; k < last; ++k)
    drawn[k] = current[k] > bounds.lower[k] + 1e-9 && current[k] < bounds.upper[k] - 1e-9;
  const PairTable pairs(x);
  // The likelihood alone: the ellipse carries the (normal) prior. Outside the box: rejected.
  auto log_likelihood = [&](const std::vector<double>& values) {
    for (std::size_t k = 0; k < n; ++k)
      if (values[k] < bounds.lower[k] || values[k] > bounds.upper[k])
        return -std::numeric_limits<double>::infinity();
    return log_marginal_likelihood_of(pairs, y, Hyperparameters::from_log(values, encoder, fitted));
  };
  // Steps before the first draw and between draws: each step moves every drawn value at once,
  // and the start (the maximum) is already where the posterior is high.
  constexpr std::size_t kBurnIn = 10, kThinning = 3, kMostShrinks = 100;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  double current_likelihood = log_likelihood(current);
  std::vector<Hyperparameters> draws;
  std::vector<double> direction(n, 0.0), proposal(n);
  for (std::size_t step = 0; draws.size() < count; ++step) {
    for (std::size_t k = 0; k < n; ++k) direction[k] = drawn[k] ? priors[k].sd * normal(rng) : 0;
    const double level = current_likelihood + std::log(uniform(rng));
    double angle = uniform(rng) * 2 * M_PI;
    double low = angle - 2 * M_PI, high = angle;
    // The ellipse through the current point and the direction, around the prior's mean, shrunk
    // towards the current point (angle 0, always accepted) until a point is above the level.
    for (std::size_t shrink = 0; shrink < kMostShrinks; ++shrink) {
      for (std::size_t k = 0; k < n; ++k) {
        proposal[k] = drawn[k] ? priors[k].mean + (current[k] - priors[k].mean) * std::cos(angle) +
                                     direction[k] * std::sin(angle)
                               : current[k];
      }
      const double value = log_likelihood(proposal);
      if (value > level) {
        current.swap(proposal);
        current_likelihood = value;
        break;
      }
      (angle < 0 ? low : high) = angle;
      angle = low + (high - low) * uniform(rng);
    }
    if (step >= kBurnIn && (step - kBurnIn) % kThinning == 0)
      draws.push_back(Hyperparameters::from_log(current, encoder, fitted));
  }
  return draws;
}

GaussianProcess::GaussianProcess(std::vector<Encoded> x, Eigen::VectorXd y, Hyperparameters h)
    : x_(std::move(x)), y_(std::move(y)), h_(std::move(h)) {
  Eigen::MatrixXd k = covariance(PairTable(x_), h_);
  cholesky_.compute(k);
  // Duplicated points with little noise can make K singular: add jitter until it factors.
  double jitter = 1e-8;
  while (cholesky_.info() != Eigen::Success && jitter < 1.0) {
    k.diagonal().array() += jitter;
    cholesky_.compute(k);
    jitter *= 10;
  }
  if (cholesky_.info() != Eigen::Success)
    throw Error("the GP covariance matrix is not positive definite");
  alpha_ = cholesky_.solve(y_);
}

void GaussianProcess::predict(const std::vector<Encoded>& points, Eigen::VectorXd& mean,
                              Eigen::VectorXd& variance, Eigen::MatrixXd* v) const {
  const Eigen::Index n = static_cast<Eigen::Index>(x_.size());
  const Eigen::Index m = static_cast<Eigen::Index>(points.size());
  Eigen::MatrixXd cross(n, m);  // k(X, points)
  for (Eigen::Index j = 0; j < m; ++j) {
    for (Eigen::Index i = 0; i < n; ++i) {
      cross(i, j) =
          covariance(x_[static_cast<std::size_t>(i)], points[static_cast<std::size_t>(j)], h_);
    }
  }
  mean = cross.transpose() * alpha_;
  cholesky_.matrixL().solveInPlace(cross);  // cross becomes L^-1 k(X, points)
  variance.resize(m);
  for (Eigen::Index j = 0; j < m; ++j) {
    variance(j) = std::max(
        prior_variance(points[static_cast<std::size_t>(j)], h_) - cross.col(j).squaredNorm(),
        1e-12);
  }
  if (v != nullptr) *v = std::move(cross);
}

}  // namespace r3::bo
