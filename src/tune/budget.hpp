// When the tuning job stops (DESIGN.md §6, budget): evaluations, generations, wall time and the
// batch job's end. The time limits look one generation ahead, with the generation a run
// typically takes: one slow generation (a compile storm, a timeout) must not end a run that has
// most of its time left.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "r3/config/tune_config.hpp"

namespace r3::tune {

class Budget {
 public:
  // `job_end`: the batch job's end (seconds since the epoch), when the scheduler says.
  Budget(const config::BudgetConfig& limits, std::optional<double> job_end)
      : limits_(limits), job_end_(job_end) {}

  // The time between two commits, and the candidates that commit held.
  void add_generation(double seconds, std::size_t candidates = 0);
  // The median of this session's generation times (0 before the first).
  double typical_generation() const;
  // The median time between two commits over the candidates the commit held: the wall time a
  // candidate takes with all the evaluators at work (0 before the first commit).
  double typical_candidate() const;

  // Why the job stops now, or "" to propose another generation. `evaluated`: candidates
  // evaluated or in flight; `elapsed`: the run's wall time so far (all sessions); `reserve`:
  // what the winner confirmation will take; `now`: seconds since the epoch; `ahead`: the
  // candidates still to be evaluated if it goes on (those in flight and the next batch; 0: one
  // typical generation), at the typical time per candidate.
  std::string stop_reason(std::size_t evaluated, std::uint32_t generation, double elapsed,
                          double reserve, double now, std::size_t ahead = 0) const;

 private:
  // The median of the values added so far, kept as they come (two heaps): asked for at every
  // proposal, a median sorted afresh each time grew with the run (generations into the
  // thousands, tens of thousands with 64 evaluators).
  class RunningMedian {
   public:
    void add(double value);
    double value() const;  // 0 when empty
    bool empty() const { return lower_.empty(); }

   private:
    std::priority_queue<double> lower_;  // the smaller half (one more when the count is odd)
    std::priority_queue<double, std::vector<double>, std::greater<double>> upper_;
  };
  config::BudgetConfig limits_;
  std::optional<double> job_end_;
  RunningMedian generations_;
  RunningMedian per_candidate_;  // seconds between commits over the candidates committed
};

}  // namespace r3::tune
