#include "posterior.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace r3::bo {

namespace {

// One compiled copy with four partial sums in a fixed order (lane j sums the products k = j mod 4,
// the tail goes to lane 0): the same inputs give the same bits wherever it is called from (see
// posterior.hpp), and the partial sums are one vector register. On x86 an AVX2 copy is chosen at
// load time where the CPU has it: four lanes, the same sums (without FMA, which would round
// differently).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define R3_BO_DOT_CLONES [[gnu::target_clones("avx2", "default")]]
#else
#define R3_BO_DOT_CLONES
#endif
using Lanes = double __attribute__((vector_size(4 * sizeof(double))));
// Four doubles read where they lie (8-byte aligned); no function takes or returns a vector, so
// the default copy's calling convention does not depend on AVX.
using UnalignedLanes =
    double __attribute__((vector_size(4 * sizeof(double)), aligned(8), may_alias));
#define R3_BO_LOAD(p) (*reinterpret_cast<const UnalignedLanes*>(p))

inline double finish(const Lanes& s, const double* a, const double* b, std::size_t from,
                     std::size_t n) {
  double s0 = s[0];
  for (std::size_t k = from; k < n; ++k) s0 += a[k] * b[k];
  return (s0 + s[1]) + (s[2] + s[3]);
}

R3_BO_DOT_CLONES [[gnu::noinline]] double dot(const double* a, const double* b, std::size_t n) {
  Lanes s = {0, 0, 0, 0};
  std::size_t k = 0;
  for (; k + 4 <= n; k += 4) s += R3_BO_LOAD(a + k) * R3_BO_LOAD(b + k);
  return finish(s, a, b, k, n);
}

// dot(row, v[c], n) for four vectors at once, each to the same bits: four independent chains of
// additions keep the adder busy where one chain waits on its own latency, and the row is loaded
// once for all four.
R3_BO_DOT_CLONES [[gnu::noinline]] void dot4(const double* row, const double* const* v,
                                             std::size_t n, double* out) {
  Lanes s0 = {0, 0, 0, 0}, s1 = s0, s2 = s0, s3 = s0;
  std::size_t k = 0;
  for (; k + 4 <= n; k += 4) {
    const Lanes r = R3_BO_LOAD(row + k);
    s0 += r * R3_BO_LOAD(v[0] + k);
    s1 += r * R3_BO_LOAD(v[1] + k);
    s2 += r * R3_BO_LOAD(v[2] + k);
    s3 += r * R3_BO_LOAD(v[3] + k);
  }
  out[0] = finish(s0, row, v[0], k, n);
  out[1] = finish(s1, row, v[1], k, n);
  out[2] = finish(s2, row, v[2], k, n);
  out[3] = finish(s3, row, v[3], k, n);
}

// dot(row, v[c], n) for `count` vectors: four at a time, the rest alone (the same bits).
void dots(const double* row, const double* const* v, std::size_t count, std::size_t n,
          double* out) {
  std::size_t c = 0;
  for (; c + 4 <= count; c += 4) dot4(row, v + c, n, out + c);
  for (; c < count; ++c) out[c] = dot(row, v[c], n);
}

}  // namespace

Posterior::Posterior(Hyperparameters h) : h_(std::move(h)) {}

double Posterior::entry(std::size_t i, double k, const std::vector<double>& v) const {
  return (k - dot(l_[i].data(), v.data(), i)) / l_[i][i];
}

void Posterior::add_entries(Column* const* columns, std::size_t count) const {
  if (count == 0) return;
  const std::size_t i = columns[0]->v.size();
  std::vector<const double*> v(count);
  for (std::size_t c = 0; c < count; ++c) v[c] = columns[c]->v.data();
  std::vector<double> dotted(count);
  dots(l_[i].data(), v.data(), count, i, dotted.data());
  for (std::size_t c = 0; c < count; ++c) {
    Column& column = *columns[c];
    double correlation = 0;
    const double k = bo::covariance(x_[i], column.point, h_, correlation);
    const double value = (k - dotted[c]) / l_[i][i];  // entry()'s arithmetic
    column.v.push_back(value);
    column.squared += value * value;
    column.nearest = std::max(column.nearest, correlation);
  }
}

Posterior::Column& Posterior::claim(const Encoded& point, const Hash128& key) {
  auto [it, added] = columns_.try_emplace(key);
  Column& c = it->second;
  c.used = round_;
  if (added) {
    ++computed_;
    c.point = point;
    c.v.reserve(x_.size() + 16);
  }
  return c;
}

void Posterior::bring_up_to_date(Column* const* columns, std::size_t count) const {
  // Row by row, each row's entries for every column that lacks it computed together: a column
  // reaches row i only after its entries of rows 0..i-1, so the order is the one add_entries
  // always follows.
  std::size_t from = x_.size();
  for (std::size_t c = 0; c < count; ++c) from = std::min(from, columns[c]->v.size());
  std::vector<Column*> due;
  due.reserve(count);
  for (std::size_t i = from; i < x_.size(); ++i) {
    due.clear();
    for (std::size_t c = 0; c < count; ++c)
      if (columns[c]->v.size() == i) due.push_back(columns[c]);
    add_entries(due.data(), due.size());
  }
}

const Posterior::Column& Posterior::column(const Encoded& point, const Hash128& key) {
  Column* c = &claim(point, key);
  bring_up_to_date(&c, 1);
  return *c;
}

void Posterior::compute(const std::vector<Encoded>& points, const std::vector<Hash128>& keys) {
  std::vector<Column*> due;
  std::unordered_set<const Column*> seen;
  for (std::size_t k = 0; k < points.size(); ++k) {
    Column& c = claim(points[k], keys[k]);
    if (c.v.size() < x_.size() && seen.insert(&c).second) due.push_back(&c);
  }
  // In blocks whose columns stay in the cache together while the rows of L go past, those
  // lacking as many rows side by side (new ones together, then those a few rows behind).
  std::stable_sort(due.begin(), due.end(),
                   [](const Column* a, const Column* b) { return a->v.size() < b->v.size(); });
  constexpr std::size_t kBlock = 32;
  for (std::size_t from = 0; from < due.size(); from += kBlock)
    bring_up_to_date(due.data() + from, std::min(due.size(), from + kBlock) - from);
}

const Posterior::Kernel& Posterior::kernel(const Encoded& point, const Hash128& key) {
  auto [it, added] = kernels_.try_emplace(key);
  Kernel& kernel = it->second;
  kernel.used = round_;
  if (added) {
    kernel.point = point;
    kernel.k.reserve(x_.size() + 16);
  }
  while (kernel.k.size() < x_.size())
    kernel.k.push_back(bo::covariance(x_[kernel.k.size()], point, h_));
  return kernel;
}

std::vector<double> Posterior::weights(const std::vector<double>& y) const {
  // L^T a = L^-1 y, solved from the last row up; L is kept by rows, so each step subtracts one
  // row's multiple (a fixed order: the same bits for the same rows and targets).
  std::vector<double> a = whiten(y);
  for (std::size_t j = a.size(); j-- > 0;) {
    a[j] /= l_[j][j];
    for (std::size_t i = 0; i < j; ++i) a[i] -= l_[j][i] * a[j];
  }
  return a;
}

double Posterior::mean(const Kernel& kernel, const std::vector<double>& weights) const {
  return dot(weights.data(), kernel.k.data(), x_.size());
}

void Posterior::means(const std::vector<const Kernel*>& kernels, const std::vector<double>& weights,
                      double* out) const {
  std::vector<const double*> v;
  v.reserve(kernels.size());
  for (const Kernel* k : kernels) v.push_back(k->k.data());
  dots(weights.data(), v.data(), v.size(), x_.size(), out);
}

void Posterior::forget_unused(std::size_t rounds) {
  std::erase_if(columns_, [&](const auto& entry) { return entry.second.used + rounds < round_; });
  std::erase_if(kernels_, [&](const auto& entry) { return entry.second.used + rounds < round_; });
}

void Posterior::append(const Encoded& x, const Hash128& key) {
  const Column& own = column(x, key);
  // The new row of L: the point's column, and on the diagonal what of its prior variance (with
  // the noise) the rows before do not explain. A duplicate of an earlier point leaves only the
  // noise; the floor keeps L invertible where rounding would take even that away.
  std::vector<double> row = own.v;
  const double prior = prior_variance(x, h_) + h_.noise_variance;
  row.push_back(std::sqrt(std::max(prior - own.squared, 1e-9 * prior)));
  l_.push_back(std::move(row));
  x_.push_back(x);
  // The kept columns and kernels gain their entries for the row when next asked for (column(),
  // compute(), kernel()): most of them are not, before the cache drops them.
}

std::vector<double> Posterior::whiten(const std::vector<double>& y) const {
  std::vector<double> w;
  w.reserve(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) w.push_back(entry(i, y[i], w));
  return w;
}

double Posterior::mean(const Column& c, const std::vector<double>& whitened) const {
  return dot(whitened.data(), c.v.data(), x_.size());
}

void Posterior::means(const std::vector<const Column*>& columns,
                      const std::vector<double>& whitened, double* out) const {
  std::vector<const double*> v;
  v.reserve(columns.size());
  for (const Column* c : columns) v.push_back(c->v.data());
  dots(whitened.data(), v.data(), v.size(), x_.size(), out);
}

double Posterior::variance(const Column& c) const {
  return std::max(prior_variance(c.point, h_) - c.squared, 1e-12);
}

double Posterior::covariance(const Column& a, const Column& b) const {
  return bo::covariance(a.point, b.point, h_) - dot(a.v.data(), b.v.data(), x_.size());
}

}  // namespace r3::bo
