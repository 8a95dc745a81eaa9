// What the winner confirmation re-measures, kept up to date as candidates are committed.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "confirmation.hpp"

namespace r3::tune {
namespace {

// The rule, on the whole record at once: the original, the rebuilt original unless it is the
// same code, then the fastest verified candidates (first of equals) of distinct source and
// configuration, `top` of them.
std::vector<std::size_t> reference_set(const run::RunRecord& record, std::size_t kernel,
                                       std::size_t top) {
  std::optional<std::size_t> original, rebuilt;
  std::vector<std::size_t> ranked;
  for (std::size_t i = 0; i < record.candidates.size(); ++i) {
    const run::CandidateRecord& c = record.candidates[i];
    if (c.kernel != kernel || c.outcome != Outcome::ok || c.configuration.empty()) continue;
    if (c.level == run::CandidateLevel::original) {
      if (!original) original = i;
      continue;
    }
    if (c.level == run::CandidateLevel::rebuilt && !rebuilt) rebuilt = i;
    ranked.push_back(i);
  }
  if (!original || ranked.empty() || top == 0) return {};
  std::stable_sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) {
    return record.candidates[a].seconds < record.candidates[b].seconds;
  });
  auto key = [&](std::size_t i) {
    return std::make_pair(record.candidates[i].source, record.candidates[i].configuration);
  };
  std::vector<std::size_t> out{*original};
  std::set<std::pair<Hash128, std::string>> seen{key(*original)};
  if (rebuilt && seen.insert(key(*rebuilt)).second) {
    out.push_back(*rebuilt);
    ranked.erase(std::find(ranked.begin(), ranked.end(), *rebuilt));
  }
  const std::size_t limit = top + (out.size() - 1);
  for (std::size_t i : ranked) {
    if (out.size() > limit) break;
    if (seen.insert(key(i)).second) out.push_back(i);
  }
  return out;
}

// Taken in a generation at a time, through failures, ties, repeated configurations, a rebuilt
// original that is or is not the original's code, and an original that verifies only later, the
// sets are the rule's on the whole record after every generation.
TEST(TuneConfirmation, SetsKeptAsCandidatesCommitAreTheRulesOnTheWholeRecord) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    const std::size_t top = seed % 4;  // 0: no confirmation
    const Hash128 sources[3] = {hash_string("a"), hash_string("b"), hash_string("c")};
    run::RunRecord record;
    ConfirmationSets sets(2, top);
    for (std::uint32_t generation = 0; generation < 40; ++generation) {
      for (int n = 0; n < 4; ++n) {
        run::CandidateRecord c;
        c.id = record.candidates.size();
        c.generation = generation;
        c.kernel = static_cast<std::uint32_t>(rng() % 2);
        const auto draw = rng() % 12;
        c.level = draw == 0   ? run::CandidateLevel::original
                  : draw == 1 ? run::CandidateLevel::rebuilt
                              : run::CandidateLevel::compiler;
        c.outcome = rng() % 5 == 0 ? Outcome::timeout : Outcome::ok;
        c.source = sources[rng() % 3];
        c.configuration = rng() % 20 == 0 ? "" : "c" + std::to_string(rng() % 8);
        c.seconds = 1e-3 * static_cast<double>(1 + rng() % 10);
        record.candidates.push_back(c);
      }
      sets.take(record);
      for (std::size_t k = 0; k < 2; ++k)
        ASSERT_EQ(sets.set(record, k), reference_set(record, k, top))
            << "seed " << seed << ", generation " << generation << ", kernel " << k;
    }
  }
}

}  // namespace
}  // namespace r3::tune
