// What becomes of an evaluation in the run database: the candidate's row filled from it, and
// the check that each kernel's original ran (else nothing can be compared with it).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "master.hpp"
#include "r3/replay/sandbox.hpp"
#include "r3/run_database.hpp"

namespace r3::tune {

// What the run database keeps of an evaluation's message.
std::string stored_message(const std::string& message);

// The fastest and slowest time of each recorded launch, summed (as `run.seconds` sums medians).
std::pair<double, double> summed_min_max(const replay::Evaluation& e);

// Fills the candidate's record from its evaluation (null: none came back, a crash), its
// regions named as the kernel's source names them.
void record_result(const Master& m, run::CandidateRecord& r, const replay::Evaluation* evaluation,
                   int evaluator);

// Stops the job with one clear error (ConfigError naming the kernel) when a kernel's original
// failed in generation `generation`.
void refuse_broken_originals(const Master& m, std::uint32_t generation);

}  // namespace r3::tune
