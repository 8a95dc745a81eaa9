// A Gaussian process posterior kept from one proposal to the next. Private to libr3bo.
//
// The optimizer conditions its models on a history that only grows: the rows fixed at the last
// hyperparameter fit, then every observation since, appended one at a time. So the Cholesky
// factor L of K(X, X) + noise grows by a row per observation, and what was computed for a
// point already scored, its column L^-1 k(X, point), only needs the entries of the rows appended
// since, added when the point is next asked for (not at every append: most kept columns are not
// asked for again before the cache drops them). A point's
// posterior then costs O(n) instead of O(n^2) kernel evaluations and flops, which keeps a
// proposal's cost flat as the history grows (the candidate pool is mostly the same points from
// one proposal to the next).
//
// Every entry is computed by one function in one fixed order, whether a column is computed whole
// or extended row by row: what the model says of a point does not depend on when it was first
// scored, or whether the run was resumed in between (the cache only saves time).
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "gp.hpp"
#include "r3/hash.hpp"

namespace r3::bo {

struct Hash128Hasher {
  std::size_t operator()(const Hash128& h) const {
    return static_cast<std::size_t>(h.low ^ h.high);
  }
};

class Posterior {
 public:
  struct Column {
    Encoded point;
    std::vector<double> v;  // L^-1 k(X, point), one entry per row
    double squared = 0;     // |v|^2, summed in row order
    // The largest correlation of the point with a row's point: how near it is to a point the
    // model conditions on (1: the same, as far as the kernel can tell).
    double nearest = 0;
    std::size_t used = 0;   // the round it was last asked for in
  };

  // k(X, point) for a model that only asks for posterior means (the feasibility classifier): a
  // mean is then kernel . weights(y), n kernel evaluations and one dot per point, where a column
  // costs O(n^2). Kept like the columns, and extended like them when next asked for.
  struct Kernel {
    Encoded point;
    std::vector<double> k;  // per row
    std::size_t used = 0;
  };

  explicit Posterior(Hyperparameters h);

  const Hyperparameters& hyperparameters() const { return h_; }
  std::size_t rows() const { return x_.size(); }
  std::size_t cached() const { return columns_.size() + kernels_.size(); }
  std::size_t computed() const { return computed_; }  // columns computed whole so far

  // Conditions on one more point. A kept column or kernel gains its entry for it when next
  // asked for (most are not, before the cache drops them), so appending costs O(n).
  void append(const Encoded& x, const Hash128& key);

  // The column of a point (computed whole and kept, unless kept already). The reference stays
  // valid until forget() or the Posterior's end.
  const Column& column(const Encoded& point, const Hash128& key);

  // Computes the columns of those points not kept yet, as column() would, but together: each
  // row of L is read once for all of them rather than once per point.
  void compute(const std::vector<Encoded>& points, const std::vector<Hash128>& keys);

  // The kernel of a point with every row (computed and kept, unless kept already); valid as a
  // column() reference is.
  const Kernel& kernel(const Encoded& point, const Hash128& key);
  // K^-1 y for targets y (one per row, in row order): the posterior mean at a point is
  // kernel.k . weights.
  std::vector<double> weights(const std::vector<double>& y) const;
  double mean(const Kernel& kernel, const std::vector<double>& weights) const;
  // mean() of several points at once (the same bits, computed four at a time).
  void means(const std::vector<const Kernel*>& kernels, const std::vector<double>& weights,
             double* out) const;

  // L^-1 y for targets y (one per row, in row order): the posterior mean at a point is
  // column.v . whitened.
  std::vector<double> whiten(const std::vector<double>& y) const;
  double mean(const Column& c, const std::vector<double>& whitened) const;
  void means(const std::vector<const Column*>& columns, const std::vector<double>& whitened,
             double* out) const;
  double variance(const Column& c) const;
  // Posterior covariance of two scored points.
  double covariance(const Column& a, const Column& b) const;

  // Drops the kept columns (they are only a cache): all, or those not asked for in the last
  // `rounds` rounds (a round: one proposal).
  void forget() {
    columns_.clear();
    kernels_.clear();
  }
  void forget_unused(std::size_t rounds);
  void next_round() { ++round_; }

 private:
  // The entry of row `i` for a point whose kernel with row i's point is `k`, given the point's
  // entries of rows 0..i-1 in `v`.
  double entry(std::size_t i, double k, const std::vector<double>& v) const;
  // Appends to each column its entry for the next row, which they all lack (they have the same
  // length): the one computation of every entry, whether a column is computed whole or extended
  // as rows are appended, and whether alone or with others (the same bits either way).
  void add_entries(Column* const* columns, std::size_t count) const;
  // The column kept for `key`, a new one (counted, with no entries yet) where none is; either
  // way it counts as asked for in this round. Its entries may lag the rows.
  Column& claim(const Encoded& point, const Hash128& key);
  // Gives each column the entries of the rows it lacks.
  void bring_up_to_date(Column* const* columns, std::size_t count) const;

  Hyperparameters h_;
  std::vector<Encoded> x_;
  std::vector<std::vector<double>> l_;  // row i of L: entries 0..i
  std::unordered_map<Hash128, Column, Hash128Hasher> columns_;
  std::unordered_map<Hash128, Kernel, Hash128Hasher> kernels_;
  std::size_t computed_ = 0;
  std::size_t round_ = 0;
};

}  // namespace r3::bo
