#include "posterior.hpp"

#include <algorithm>
#include <cmath>

namespace r3::bo {

namespace {

// One compiled copy with four partial sums in a fixed order: the same inputs give the same bits
// wherever it is called from (see posterior.hpp), and the partial sums still vectorise. On x86
// an AVX2 copy is chosen at load time where the CPU has it: four lanes, the same sums (without
// FMA, which would round differently).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define R3_BO_DOT_CLONES [[gnu::target_clones("avx2", "default")]]
#else
#define R3_BO_DOT_CLONES
#endif
R3_BO_DOT_CLONES [[gnu::noinline]] double dot(const double* a, const double* b, std::size_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += a[k] * b[k];
    s1 += a[k + 1] * b[k + 1];
    s2 += a[k + 2] * b[k + 2];
    s3 += a[k + 3] * b[k + 3];
  }
  for (; k < n; ++k) s0 += a[k] * b[k];
  return (s0 + s1) + (s2 + s3);
}

}  // namespace

Posterior::Posterior(Hyperparameters h) : h_(std::move(h)) {}

double Posterior::entry(std::size_t i, double k, const std::vector<double>& v) const {
  return (k - dot(l_[i].data(), v.data(), i)) / l_[i][i];
}

void Posterior::add_entry(Column& c) const {
  const std::size_t i = c.v.size();
  const double value = entry(i, h_.signal_variance * correlation(x_[i], c.point, h_), c.v);
  c.v.push_back(value);
  c.squared += value * value;
}

Posterior::Column* Posterior::claim(const Encoded& point, const Hash128& key) {
  auto [it, added] = columns_.try_emplace(key);
  Column& c = it->second;
  c.used = round_;
  if (!added) return nullptr;
  ++computed_;
  c.point = point;
  c.v.reserve(x_.size() + 16);
  return &c;
}

const Posterior::Column& Posterior::column(const Encoded& point, const Hash128& key) {
  if (Column* c = claim(point, key)) {
    while (c->v.size() < x_.size()) add_entry(*c);
    return *c;
  }
  return columns_.at(key);
}

void Posterior::compute(const std::vector<Encoded>& points, const std::vector<Hash128>& keys) {
  std::vector<Column*> fresh;
  for (std::size_t k = 0; k < points.size(); ++k)
    if (Column* c = claim(points[k], keys[k])) fresh.push_back(c);
  // In blocks whose columns stay in the cache together while the rows of L go past.
  constexpr std::size_t kBlock = 32;
  for (std::size_t from = 0; from < fresh.size(); from += kBlock) {
    const std::size_t to = std::min(fresh.size(), from + kBlock);
    for (std::size_t i = 0; i < x_.size(); ++i)
      for (std::size_t k = from; k < to; ++k) add_entry(*fresh[k]);
  }
}

void Posterior::forget_unused(std::size_t rounds) {
  std::erase_if(columns_, [&](const auto& entry) { return entry.second.used + rounds < round_; });
}

void Posterior::append(const Encoded& x, const Hash128& key) {
  const Column& own = column(x, key);
  // The new row of L: the point's column, and on the diagonal what of its prior variance (with
  // the noise) the rows before do not explain. A duplicate of an earlier point leaves only the
  // noise; the floor keeps L invertible where rounding would take even that away.
  std::vector<double> row = own.v;
  const double prior = h_.signal_variance + h_.noise_variance;
  row.push_back(std::sqrt(std::max(prior - own.squared, 1e-9 * prior)));
  l_.push_back(std::move(row));
  x_.push_back(x);
  for (auto& [k, c] : columns_) add_entry(c);
}

std::vector<double> Posterior::whiten(const std::vector<double>& y) const {
  std::vector<double> w;
  w.reserve(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) w.push_back(entry(i, y[i], w));
  return w;
}

double Posterior::mean(const Column& c, const std::vector<double>& whitened) const {
  return dot(c.v.data(), whitened.data(), x_.size());
}

double Posterior::variance(const Column& c) const {
  return std::max(h_.signal_variance - c.squared, 1e-12);
}

double Posterior::covariance(const Column& a, const Column& b) const {
  return h_.signal_variance * correlation(a.point, b.point, h_) -
         dot(a.v.data(), b.v.data(), x_.size());
}

}  // namespace r3::bo
