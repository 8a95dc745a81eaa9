#include "budget.hpp"

#include "r3/duration.hpp"

namespace r3::tune {

void Budget::RunningMedian::add(double value) {
  if (lower_.empty() || value <= lower_.top()) {
    lower_.push(value);
  } else {
    upper_.push(value);
  }
  if (lower_.size() > upper_.size() + 1) {
    upper_.push(lower_.top());
    lower_.pop();
  } else if (upper_.size() > lower_.size()) {
    lower_.push(upper_.top());
    upper_.pop();
  }
}

double Budget::RunningMedian::value() const {
  if (lower_.empty()) return 0;
  return lower_.size() > upper_.size() ? lower_.top() : 0.5 * (lower_.top() + upper_.top());
}

void Budget::add_generation(double seconds, std::size_t candidates) {
  generations_.add(seconds);
  if (candidates > 0) per_candidate_.add(seconds / static_cast<double>(candidates));
}

double Budget::typical_generation() const { return generations_.value(); }

double Budget::typical_candidate() const { return per_candidate_.value(); }

std::string Budget::stop_reason(std::size_t evaluated, std::uint32_t generation, double elapsed,
                                double reserve, double now, std::size_t ahead) const {
  // With generations in flight, the work ahead is their candidates and the next batch: one slow
  // candidate holds its generation's commit, not the others'.
  const double next = ahead > 0 && !per_candidate_.empty()
                          ? per_candidate_.value() * static_cast<double>(ahead)
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
