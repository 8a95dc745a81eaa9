// What the job prints per generation: the best of each kernel, taken in as generations commit.
#include <gtest/gtest.h>

#include <random>

#include "r3/report/analysis.hpp"
#include "summary.hpp"

namespace r3::tune {
namespace {

// Taken in a generation at a time, the bests are what report::analyse finds in the whole
// record: the first of equally fast verified samples, the first original that verified, per
// kernel, whatever the failures and ties in between.
TEST(TuneSummary, KernelBestsTakenGenerationByGenerationAreWhatTheAnalysisFinds) {
  std::mt19937_64 rng(3);
  run::RunRecord record;
  KernelBests bests(2);
  for (std::uint32_t generation = 0; generation < 60; ++generation) {
    for (int i = 0; i < 5; ++i) {
      run::CandidateRecord c;
      c.id = record.candidates.size();
      c.generation = generation;
      c.kernel = static_cast<std::uint32_t>(rng() % 3);  // 2: a kernel no longer configured
      c.level = rng() % 9 == 0 ? run::CandidateLevel::original : run::CandidateLevel::compiler;
      c.outcome = rng() % 4 == 0 ? Outcome::wrong_result : Outcome::ok;
      c.seconds = c.outcome == Outcome::ok ? 1e-3 * static_cast<double>(1 + rng() % 50) : 0;
      record.candidates.push_back(c);
    }
    bests.take(record);
    const auto analysed = report::analyse(record, {"a", "b"});
    for (std::size_t k = 0; k < 2; ++k) {
      const KernelBests::Kernel& kept = bests.kernels()[k];
      auto index = [&](const run::CandidateRecord* c) {
        return c ? std::optional<std::size_t>(static_cast<std::size_t>(c - record.candidates.data()))
                 : std::nullopt;
      };
      ASSERT_EQ(kept.best, index(analysed[k].best_sample)) << "generation " << generation;
      ASSERT_EQ(kept.original, index(analysed[k].original)) << "generation " << generation;
    }
  }
}

}  // namespace
}  // namespace r3::tune
