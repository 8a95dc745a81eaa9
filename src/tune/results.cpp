#include "results.hpp"

#include <tuple>

#include "r3/log.hpp"
#include "region_names.hpp"

namespace r3::tune {
namespace {

// Why the job cannot go on when a kernel's original (the application's code as recorded, or its
// source at its defaults) failed; "" when it may. The recorded PTX through the JIT failing is
// only a warning: the recorded code still runs, and the compiler level learns what fails.
std::string original_failure(const Master& m, const run::CandidateRecord& c, std::string& key) {
  if (c.outcome == Outcome::ok || !run::is_original(c.level)) return "";
  const config::KernelSelection& selection = m.config.kernels.at(c.kernel);
  const std::string kernel = "kernel '" + selection.name + "'";
  const std::string source = m.record.sources.count(c.source) ? m.record.sources.at(c.source) : "";
  const bool recorded = source.empty();
  key = "kernels[" + std::to_string(c.kernel) + "]." + (recorded ? "name" : "source");
  std::string what;
  if (recorded && c.level == run::CandidateLevel::original) {
    what = "the application's code as recorded";
  } else if (recorded) {
    log::warning(kernel, ": the recorded PTX does not run through the JIT (", to_string(c.outcome),
                 ": ", first_diagnostic(c.message), "); the compiler level goes on without it");
    return "";
  } else {
    what = "its source " + selection.source.filename().string() + " at its defaults";
  }
  const std::string compiler =
      recorded ? "the CUDA driver"
               : (m.backend == config::Backend::cuda ? "NVRTC" : "Clang (host backend)");
  std::string verb = c.outcome == Outcome::compile_error ? "does not compile with " + compiler
                     : c.outcome == Outcome::wrong_result
                         ? "does not reproduce the recorded results"
                         : "fails to run (" + std::string(to_string(c.outcome)) + ")";
  return kernel + ": " + what + " " + verb + ": " + first_diagnostic(c.message) +
         " (fix the set-up: nothing else of this kernel can be compared with it)";
}

}  // namespace

std::string stored_message(const std::string& message) {
  return message.size() > 4000 ? message.substr(0, 4000) + " ..." : message;
}

// The fastest and slowest time of each recorded launch, summed (as `run.seconds` sums medians).
std::pair<double, double> summed_min_max(const replay::Evaluation& e) {
  std::pair<double, double> sums{0, 0};
  for (const auto& l : e.run.launches) {
    sums.first += l.time.min;
    sums.second += l.time.max;
  }
  return sums;
}

// Fills the candidate's record from its evaluation (null: none came back, a crash), its
// regions named as the kernel's source names them.
void record_result(const Master& m, run::CandidateRecord& r, const replay::Evaluation* evaluation,
                   int evaluator) {
  if (evaluation == nullptr) {
    r.outcome = Outcome::crash;
    r.message = "no result came back from its evaluator";
    return;
  }
  const replay::Evaluation& e = *evaluation;
  r.outcome = e.outcome;
  r.message = with_source_names(m.parameter_names.at(r.kernel), stored_message(e.message));
  r.compile_seconds = e.compile_seconds;
  r.evaluation_seconds = e.seconds;
  r.registers = e.resources.registers;
  r.spilled_bytes = e.resources.spilled_bytes;
  r.shared_bytes = e.resources.shared_bytes;
  r.code_bytes = e.resources.code_bytes;
  r.evaluator = evaluator;
  if (e.outcome == replay::Outcome::ok) {
    r.seconds = e.run.seconds;
    std::tie(r.min_seconds, r.max_seconds) = summed_min_max(e);
  }
}

void refuse_broken_originals(const Master& m, std::uint32_t generation) {
  for (const auto& c : m.record.candidates) {
    if (c.generation != generation) continue;
    std::string key;
    if (std::string why = original_failure(m, c, key); !why.empty()) m.config.fail(key, why);
  }
}


}  // namespace r3::tune
