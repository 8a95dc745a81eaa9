#include "budget.hpp"

#include <algorithm>

#include "r3/duration.hpp"

namespace r3::tune {

namespace {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

void Budget::add_generation(double seconds, std::size_t candidates) {
  generations_.push_back(seconds);
  if (candidates > 0) per_candidate_.push_back(seconds / static_cast<double>(candidates));
}

double Budget::typical_generation() const { return median(generations_); }

double Budget::typical_candidate() const { return median(per_candidate_); }

std::string Budget::stop_reason(std::size_t evaluated, std::uint32_t generation, double elapsed,
                                double reserve, double now, std::size_t ahead) const {
  // With generations in flight, the work ahead is their candidates and the next batch: one slow
  // candidate holds its generation's commit, not the others'.
  const double next = ahead > 0 && !per_candidate_.empty()
                          ? median(per_candidate_) * static_cast<double>(ahead)
                          : typical_generation();
  if (evaluated >= limits_.evaluations)
    return "budget.evaluations (" + std::to_string(limits_.evaluations) + ") reached";
  if (generation >= limits_.generations)
    return "budget.generations (" + std::to_string(limits_.generations) + ") reached";
  if (elapsed + next + reserve > limits_.wall_time_s)
    return "budget.wall_time (" + r3::format_duration(limits_.wall_time_s) +
           ") would be passed by another generation and the confirmation";
  if (job_end_ && now + next + reserve + limits_.job_end_margin_s > *job_end_)
    return "the batch job's time limit is near (budget.job_end_margin " +
           r3::format_duration(limits_.job_end_margin_s) + ")";
  return "";
}

}  // namespace r3::tune
