// When the tuning job stops: the time limits look one typical generation ahead, so that one slow
// generation does not end a run that has most of its time left.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "budget.hpp"

namespace r3::tune {
namespace {

// The typical times are the medians of every generation so far, kept as generations come (not
// sorted again at every proposal): the same as sorting them, at every count, odd or even.
TEST(TuneBudget, TheTypicalTimesAreTheMediansOfEveryGenerationSoFar) {
  Budget budget(config::BudgetConfig{}, std::nullopt);
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> seconds(0.0, 1.0);
  std::vector<double> generations, per_candidate;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  for (int g = 0; g < 301; ++g) {
    const double s = g % 17 == 0 ? 2.0 : seconds(rng);  // ties too
    const std::size_t candidates = 1 + static_cast<std::size_t>(g % 4);
    budget.add_generation(s, candidates);
    generations.push_back(s);
    per_candidate.push_back(s / static_cast<double>(candidates));
    ASSERT_DOUBLE_EQ(budget.typical_generation(), median(generations)) << "after " << g + 1;
    ASSERT_DOUBLE_EQ(budget.typical_candidate(), median(per_candidate)) << "after " << g + 1;
  }
}

TEST(TuneBudget, OneSlowGenerationDoesNotEndTheRun) {
  config::BudgetConfig limits;
  limits.wall_time_s = 60;
  Budget budget(limits, std::nullopt);
  // Generation times as in a run whose first generation compiled everything (20 s).
  double elapsed = 0;
  std::uint32_t generation = 0;
  for (double seconds : {20.0, 2.0, 2.1, 1.9}) {
    budget.add_generation(seconds);
    elapsed += seconds;
    ++generation;
  }
  EXPECT_NEAR(budget.typical_generation(), 2.05, 1e-9);
  // 26 s of 60 used and a 2 s confirmation: the run goes on (a stop on the slowest generation,
  // 20 s, would have ended it here).
  EXPECT_EQ(budget.stop_reason(20, generation, elapsed, 2.0, 0), "");
  // Run until it stops: it must use at least 90% of its wall time.
  while (budget.stop_reason(20, generation, elapsed, 2.0, 0).empty()) {
    budget.add_generation(2.0);
    elapsed += 2.0;
    ++generation;
  }
  EXPECT_GE(elapsed + 2.0, 0.9 * limits.wall_time_s);
  EXPECT_LE(elapsed + 2.0, limits.wall_time_s);
  EXPECT_NE(budget.stop_reason(20, generation, elapsed, 2.0, 0).find("budget.wall_time"),
            std::string::npos);
}

// With generations in flight the look-ahead is the candidates still to run, at the typical time
// per candidate: eight generations held up behind one hanging candidate do not look like eight
// typical generations of work.
TEST(TuneBudget, WorkInFlightIsCountedByItsCandidates) {
  config::BudgetConfig limits;
  limits.wall_time_s = 60;
  Budget budget(limits, std::nullopt);
  for (int g = 0; g < 9; ++g) budget.add_generation(1.0, 4);  // 0.25 s per candidate
  EXPECT_EQ(budget.stop_reason(40, 10, 50, 2.0, 0, 4 * 8), "");   // 50 + 8 s + 2 s
  EXPECT_NE(budget.stop_reason(40, 10, 50, 2.0, 0, 4 * 9).find("budget.wall_time"),
            std::string::npos);  // 50 + 9 s + 2 s
  EXPECT_EQ(budget.stop_reason(40, 10, 56.5, 2.0, 0), "");  // no count: one generation, 1 s
  EXPECT_DOUBLE_EQ(budget.typical_candidate(), 0.25);
}

// The job keeps enough candidates queued to outlast its slowest proposal (job.cpp, queue_target)
// at the time a candidate typically takes: the median, which one stalled commit does not move.
TEST(TuneBudget, TheTypicalCandidateIsTheMedianTimePerCandidateBetweenCommits) {
  Budget budget(config::BudgetConfig{}, std::nullopt);
  EXPECT_EQ(budget.typical_candidate(), 0.0) << "before the first commit";
  budget.add_generation(0.1, 2);
  budget.add_generation(0.9, 2);  // a commit that waited for the search
  budget.add_generation(0.12, 2);
  budget.add_generation(2.0, 0);  // holding nothing: not a candidate's time
  EXPECT_DOUBLE_EQ(budget.typical_candidate(), 0.06);
}

TEST(TuneBudget, EvaluationsGenerationsAndTheJobsEnd) {
  config::BudgetConfig limits;
  limits.evaluations = 10;
  limits.generations = 3;
  limits.job_end_margin_s = 100;
  Budget budget(limits, 1000.0);
  EXPECT_NE(budget.stop_reason(10, 0, 0, 0, 0).find("budget.evaluations (10)"), std::string::npos);
  EXPECT_NE(budget.stop_reason(5, 3, 0, 0, 0).find("budget.generations (3)"), std::string::npos);
  budget.add_generation(50);
  EXPECT_EQ(budget.stop_reason(5, 1, 0, 0, 800), "");
  EXPECT_NE(budget.stop_reason(5, 1, 0, 0, 860).find("time limit is near"), std::string::npos);
}

}  // namespace
}  // namespace r3::tune

#include "r3/evolve/response.hpp"
#include "region_names.hpp"

namespace r3::tune {
namespace {

// Regions named after what reaches them are shown as the source names the parameters.
TEST(TuneRegionNames, RecordedNamesAreShownWithTheSourcesParameterNames) {
  const std::vector<std::string> names = evolve::parameter_names(evolve::entry_signature(
      "__global__ void mm(const float* __restrict__ A, float* B, Fields f, float* const* table, "
      "int n) {}\n",
      "mm"));
  ASSERT_EQ(names, (std::vector<std::string>{"A", "B", "f", "table", "n"}));
  EXPECT_EQ(evolve::parameter_names("void k(float*, int)"), (std::vector<std::string>{"", ""}));
  // A kernel on the first line after a leading newline (a raw string literal's source) is found:
  // this once looped forever.
  EXPECT_EQ(evolve::parameter_names(evolve::entry_signature(
                "\n__global__ void s(const float* in, float* out) {\n  out[0] = in[0];\n}\n", "s")),
            (std::vector<std::string>{"in", "out"}));
  EXPECT_TRUE(evolve::parameter_names("void k(void)").empty());
  EXPECT_EQ(r3::capture::source_region_name(names, "arg1"), "B");
  EXPECT_EQ(r3::capture::source_region_name(names, "arg2+16"), "f+16");
  EXPECT_EQ(r3::capture::source_region_name(names, "*(arg3+8)"), "*(table+8)");
  EXPECT_EQ(r3::capture::source_region_name(names, "arg12"), "arg12") << "no such parameter";
  EXPECT_EQ(r3::capture::source_region_name(names, "weights"), "weights") << "a module global keeps its name";
  EXPECT_EQ(with_source_names(names, "launch 0: region 'arg1' differs (3 of 8); region 'w' too"),
            "launch 0: region 'B' (arg1) differs (3 of 8); region 'w' too");
  EXPECT_EQ(with_source_names({}, "region 'arg1'"), "region 'arg1'");
}

}  // namespace
}  // namespace r3::tune
