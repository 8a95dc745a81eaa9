#include "budget.hpp"

#include <algorithm>

namespace r3::tune {

double Budget::typical_generation() const {
  if (generations_.empty()) return 0;
  std::vector<double> sorted = generations_;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

std::string Budget::stop_reason(std::size_t evaluated, std::uint32_t generation, double elapsed,
                                double reserve, double now, std::size_t ahead) const {
  const double next = typical_generation() * static_cast<double>(std::max<std::size_t>(1, ahead));
  if (evaluated >= limits_.evaluations)
    return "budget.evaluations (" + std::to_string(limits_.evaluations) + ") reached";
  if (generation >= limits_.generations)
    return "budget.generations (" + std::to_string(limits_.generations) + ") reached";
  if (elapsed + next + reserve > limits_.wall_time_s)
    return "budget.wall_time (" + config::format_duration(limits_.wall_time_s) +
           ") would be passed by another generation and the confirmation";
  if (job_end_ && now + next + reserve + limits_.job_end_margin_s > *job_end_)
    return "the batch job's time limit is near (budget.job_end_margin " +
           config::format_duration(limits_.job_end_margin_s) + ")";
  return "";
}

}  // namespace r3::tune
