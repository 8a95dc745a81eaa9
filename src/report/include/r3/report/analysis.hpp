// What a run database says about each kernel: the original, the best single sample, the winner
// after confirmation with its speedup and spread, the winner's lineage, and what each level of the
// search found.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "r3/run_database.hpp"

namespace r3::report {

// One candidate's re-measurements in the latest winner confirmation.
struct ConfirmedCandidate {
  std::uint64_t candidate = 0;
  std::vector<double> seconds;  // one median per (evaluator, round), ok runs only
  std::size_t failed = 0;       // runs that did not verify or finished otherwise
  double median = 0;
  double low = 0;  // fastest and slowest of `seconds`
  double high = 0;
};

struct LevelFinding {
  std::size_t evaluated = 0;
  std::size_t ok = 0;
  double best_seconds = 0;  // single-sample best of the level's candidates (0: none ok)
};

struct KernelResult {
  std::size_t kernel = 0;
  std::string name;                                   // as tune.yaml names it
  const run::CandidateRecord* original = nullptr;     // the original's evaluation, when ok
  // The application's code rebuilt the way candidates are (its source through NVRTC, or the
  // recorded PTX through the JIT), when ok; absent where candidates are not rebuilt (host).
  const run::CandidateRecord* rebuilt = nullptr;
  const run::CandidateRecord* best_sample = nullptr;  // fastest single sample
  const run::CandidateRecord* winner = nullptr;       // confirmed fastest, else best_sample
  bool confirmed = false;       // winner and original were re-measured side by side
  double original_seconds = 0;  // confirmed medians when confirmed, else single samples
  double winner_seconds = 0;
  // Speedup of the winner over the original: the median of the ratios of neighbouring runs
  // (same evaluator, same round) when confirmed, and their range; single samples otherwise.
  double speedup = 0;
  double speedup_low = 0;
  double speedup_high = 0;
  std::size_t pairs = 0;
  // The original's time over the rebuilt original's (median of neighbouring pairs when
  // confirmed): below 1 the rebuild is slower than what the application runs. 0 when unknown.
  double rebuilt_ratio = 0;
  // No candidate beat the application's own code: keep it (the winner is the original).
  bool keep_original = false;
  std::set<int> evaluators;  // that took part in the confirmation
  std::vector<ConfirmedCandidate> confirmations;
  std::vector<const run::CandidateRecord*> lineage;  // the original first, the winner last
  std::map<std::string, LevelFinding> levels;        // by level name
};

// `kernel_names` are tune.yaml's kernels in order. The records point into `record`, which must
// outlive the results.
std::vector<KernelResult> analyse(const run::RunRecord& record,
                                  const std::vector<std::string>& kernel_names);

double median(std::vector<double> values);

}  // namespace r3::report
