#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "r3/log.hpp"

namespace {

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_level_ = r3::log::level();
    saved_rank_ = r3::log::rank();
    r3::log::set_sink([this](std::string_view line) { lines_.emplace_back(line); });
  }
  void TearDown() override {
    r3::log::set_sink(nullptr);
    r3::log::set_level(saved_level_);
    r3::log::set_rank(saved_rank_);
  }
  std::vector<std::string> lines_;
  r3::log::Level saved_level_{};
  int saved_rank_ = -1;
};

TEST_F(LogTest, PrefixShowsRankAndLevel) {
  r3::log::set_rank(3);
  r3::log::set_level(r3::log::Level::info);
  r3::log::warning("disk ", 92, "% full");
  r3::log::info("generation ", 4);
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_EQ(lines_[0], "r3[3]: warning: disk 92% full");
  EXPECT_EQ(lines_[1], "r3[3]: generation 4");
}

TEST_F(LogTest, NoRankMeansNoBrackets) {
  r3::log::set_rank(-1);
  r3::log::error("boom");
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0], "r3: error: boom");
}

TEST_F(LogTest, LevelFiltersLessImportantMessages) {
  r3::log::set_level(r3::log::Level::warning);
  r3::log::debug("hidden");
  r3::log::info("hidden");
  r3::log::warning("shown 1");
  r3::log::error("shown 2");
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_NE(lines_[0].find("shown 1"), std::string::npos);
  EXPECT_NE(lines_[1].find("shown 2"), std::string::npos);
  EXPECT_FALSE(r3::log::enabled(r3::log::Level::debug));
  EXPECT_TRUE(r3::log::enabled(r3::log::Level::error));
}

TEST(LogLevels, ParseNamesInAnyCase) {
  EXPECT_EQ(r3::log::parse_level("DEBUG"), r3::log::Level::debug);
  EXPECT_EQ(r3::log::parse_level("warn"), r3::log::Level::warning);
  EXPECT_EQ(r3::log::parse_level("Trace"), r3::log::Level::trace);
  EXPECT_FALSE(r3::log::parse_level("loud").has_value());
}

TEST(LogRank, ComesFromTheLauncherEnvironment) {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "FLUX_TASK_RANK"}) {
    unsetenv(name);
  }
  EXPECT_FALSE(r3::log::rank_from_environment().has_value());
  setenv("SLURM_PROCID", "17", 1);
  EXPECT_EQ(r3::log::rank_from_environment(), 17);
  setenv("OMPI_COMM_WORLD_RANK", "5", 1);  // Open MPI's variable wins over Slurm's
  EXPECT_EQ(r3::log::rank_from_environment(), 5);
  setenv("OMPI_COMM_WORLD_RANK", "x5", 1);  // garbage is ignored
  EXPECT_EQ(r3::log::rank_from_environment(), 17);
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("SLURM_PROCID");
}

}  // namespace
