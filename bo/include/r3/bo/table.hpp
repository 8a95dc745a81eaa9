// A tuning problem given as a table of measured configurations, for simulating searches:
// CSV, one column per parameter and a `time` column (a number, or `fail`). The space is the
// product of each column's distinct values (numeric columns ordinal, others categorical),
// limited by known constraints when given (expressions over the column names, as tune.yaml's
// `constraints:`); a configuration the table does not hold counts as a failure, and rows that
// break a constraint are left out.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "r3/bo/optimizer.hpp"

namespace r3::bo {

class Table {
 public:
  // Throws r3::Error naming the file and line for a malformed table, or the constraint that
  // does not parse or names no column.
  static Table load_csv(const std::filesystem::path& path,
                        const std::vector<std::string>& constraints = {});

  const Space& space() const { return space_; }
  const std::filesystem::path& path() const { return path_; }
  Outcome evaluate(const Configuration& configuration) const;
  double optimum() const { return optimum_; }  // the lowest time in the table
  std::size_t rows() const { return rows_; }
  std::size_t failed_rows() const { return failed_rows_; }
  std::size_t excluded_rows() const { return excluded_rows_; }  // breaking a constraint
  // Configurations of the space that meet the constraints (the random baseline's population).
  std::size_t points() const { return points_; }
  // How many configurations took at most `time`.
  std::size_t count_at_most(double time) const;

 private:
  explicit Table(Space space) : space_(std::move(space)) {}
  std::filesystem::path path_;
  Space space_;
  std::unordered_map<Hash128, std::optional<double>> times_;  // nullopt: the row failed
  double optimum_ = 0;
  std::size_t rows_ = 0;
  std::size_t failed_rows_ = 0;
  std::size_t excluded_rows_ = 0;
  std::size_t points_ = 0;
};

// Known constraints from a file: one expression per line; blank lines and '#' comments skipped.
std::vector<std::string> load_constraints(const std::filesystem::path& path);

// The time of each evaluation in order (+infinity for failures).
using Trace = std::vector<double>;

// Bayesian optimisation with batches of `batch`, until `budget` evaluations, or until a time
// at most `stop_at` was found (0: never stop early).
Trace run_bayesian(const Table& table, const Options& options, std::size_t budget,
                   std::size_t batch, double stop_at = 0);
// Distinct configurations drawn uniformly from the space, until `budget` evaluations or a
// time at most `stop_at`.
Trace run_random(const Table& table, std::uint64_t seed, std::size_t budget, double stop_at = 0);
// The median number of draws that random search without replacement needs to hit one of `good`
// configurations among `points`: the smallest k with 1 - C(points - good, k) / C(points, k) >= 1/2.
double random_search_median(std::size_t points, std::size_t good);
// The number of evaluations after which the best time is at most `target`; nullopt if never.
std::optional<std::size_t> evaluations_to_reach(const Trace& trace, double target);

}  // namespace r3::bo
