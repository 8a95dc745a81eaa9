// Kokkos on CUDA (issue 27): an application built with a tuning-enabled Kokkos for CUDA
// (examples/kokkos/build_kokkos.sh) is recorded by Kokkos label, replayed verified with the tiles
// Kokkos would launch, tuned on what Kokkos' tuning interface can set, and run with the tuned
// tile through that interface with its result unchanged. Needs a GPU and the examples built by
// build_kokkos.sh: R3_TEST_KOKKOS_CUDA_EXAMPLES names their directory (OUTDIR/examples).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "require_gpu.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace r3::replay {
namespace {

using test::contains;

// The text of a file ("" when it cannot be read).
std::string text_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Tunes the Kokkos kernel `label` of `capture` (2 ranks, 16 evaluations) into `dir`/results and
// checks that only what Kokkos' tuning interface can set was searched: its launch level.
test::ProcessResult tune_kokkos_kernel(const std::filesystem::path& dir, const std::string& capture,
                                       const std::string& label) {
  std::ofstream(dir / "tune.yaml")
      << "capture: \"" << capture << "\"\nbackend: cuda\n"
      << "kernels:\n  - name: \"" << label << "\"\n"
      << "budget:\n  evaluations: 16\n"
      << "timing:\n  repeats: 5\n"
      << "output:\n  directory: \"" << (dir / "results").string() << "\"\n";
  auto job = test::run_process(
      {R3_TEST_MPIEXEC, "-n", "2", "--oversubscribe", R3_TEST_R3_MPI, (dir / "tune.yaml").string()},
      std::chrono::seconds(600));
  const std::string candidates = text_of(dir / "results" / "candidates.csv");
  EXPECT_FALSE(contains(candidates, ",compiler,")) << candidates;
  EXPECT_TRUE(contains(candidates, ",launch,")) << candidates;
  return job;
}

// The example `program` of R3_TEST_KOKKOS_CUDA_EXAMPLES; "" when it is not there.
std::string kokkos_example(const char* program) {
  const char* dir = std::getenv("R3_TEST_KOKKOS_CUDA_EXAMPLES");
  if (dir == nullptr || !std::filesystem::exists(std::filesystem::path(dir) / program)) return "";
  return (std::filesystem::path(dir) / program).string();
}

#define R3_REQUIRE_KOKKOS_EXAMPLE(path)                                                    \
  if ((path).empty())                                                                      \
  GTEST_SKIP() << "Kokkos on CUDA is not tested: set R3_TEST_KOKKOS_CUDA_EXAMPLES to the " \
                  "examples examples/kokkos/build_kokkos.sh builds (OUTDIR/examples)"

class KokkosCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    R3_REQUIRE_GPU_FOR("Kokkos on CUDA");
    heat_ = kokkos_example("kokkos_heat");
    R3_REQUIRE_KOKKOS_EXAMPLE(heat_);
    capture_ = (dir_ / "heat.h5").string();
    auto rec = test::run_process({R3_TEST_R3, "record", "--kokkos", "-k", "heat::step",
                                  "--launches", "1", "-o", capture_, "--", heat_, "1024", "4"},
                                 std::chrono::seconds(300));
    ASSERT_EQ(rec.exit_code, 0) << rec.out << rec.err;
  }

  test::ProcessResult replay(const std::string& block) {
    std::vector<std::string> argv = {R3_TEST_R3, "replay", capture_, "-k", "heat::step"};
    if (!block.empty()) argv.insert(argv.end(), {"--block", block});
    return test::run_process(argv, std::chrono::seconds(300));
  }

  // "heat::step tile 8 x 8": the tile the application ran with; its total heat.
  static std::string line_of(const std::string& out, const std::string& start) {
    const auto at = out.find(start);
    return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
  }

  test::TempDir dir_;
  std::string heat_, capture_;
};

TEST_F(KokkosCuda, AnMDRangeKernelRecordedByLabelReplaysWithTheTilesKokkosWouldLaunch) {
  auto inspect = test::run_process({R3_TEST_R3, "inspect", capture_});
  EXPECT_TRUE(contains(inspect.out, "label      heat::step")) << inspect.out;
  EXPECT_TRUE(contains(inspect.out, "block 8x8x1")) << inspect.out;
  // The tile candidates the application declares for its own tuning variables: the job's.
  EXPECT_TRUE(contains(inspect.out, "declares   tile_size_0: 1 2 4 8 16 32 64")) << inspect.out;

  auto recorded = replay("");
  EXPECT_EQ(recorded.exit_code, 0) << recorded.out << recorded.err;
  EXPECT_TRUE(contains(recorded.out, "1 launch(es) verified")) << recorded.out;
  // Tiles the closure did not hold: its policy is rewritten with the block, and every one
  // computes the application's result (a block apart from the tile did not: Kokkos' device code
  // walks the policy's tiles).
  for (const char* tile : {"32,4,1", "16,16,1", "64,2,1", "4,32,1"}) {
    auto retiled = replay(tile);
    EXPECT_EQ(retiled.exit_code, 0) << tile << "\n" << retiled.out << retiled.err;
    EXPECT_TRUE(contains(retiled.out, "1 launch(es) verified")) << tile << "\n" << retiled.out;
  }
  auto no_tile = replay("8,8,2");
  EXPECT_NE(no_tile.exit_code, 0);
  EXPECT_TRUE(
      contains(no_tile.out + no_tile.err, "is no tile of this rank-2 Kokkos MDRange kernel"))
      << no_tile.out << no_tile.err;
}

TEST_F(KokkosCuda, TheTunedTileRunsInTheApplicationThroughKokkosTuningInterface) {
  const auto results = dir_ / "results";
  auto job = tune_kokkos_kernel(dir_.path(), capture_, "heat::step");
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_TRUE(contains(job.err, "is the Kokkos kernel 'heat::step'")) << job.err;
  EXPECT_TRUE(contains(job.err,
                       "x takes the values the application declared for "
                       "heat::step_tile_size_0"))
      << job.err;

  const std::string best = text_of(results / "heat__step" / "best.yaml");
  std::smatch block;
  const bool tuned = std::regex_search(best, block, std::regex(R"(block: \[(\d+), (\d+), 1\])"));
  const bool keep = contains(best, "# keep the application's code");
  ASSERT_TRUE(tuned || keep) << best;

  auto plain = test::run_process({heat_, "1024", "20"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  auto applied =
      test::run_process({R3_TEST_R3, "apply", results.string(), "--", heat_, "1024", "20"},
                        std::chrono::seconds(300));
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  EXPECT_FALSE(line_of(plain.out, "heat after").empty()) << plain.out;
  EXPECT_EQ(line_of(applied.out, "heat after"), line_of(plain.out, "heat after"));
  if (tuned && !keep) {
    EXPECT_EQ(line_of(applied.out, "heat::step tile"),
              "heat::step tile " + block[1].str() + " x " + block[2].str())
        << best << applied.err;
    EXPECT_TRUE(contains(applied.err, "applied heat::step_tile_size_0 = " + block[1].str()))
        << applied.err;
  }
}

// A TeamPolicy kernel with Kokkos::AUTO team size and vector length (policies.cpp's matvec):
// replayed with the team shapes Kokkos' team-size tuner can choose, tuned on them, and run with
// the tuned one through that tuner (--kokkos-tune-internals), which r3 apply answers.
class KokkosCudaTeams : public ::testing::Test {
 protected:
  void SetUp() override {
    R3_REQUIRE_GPU_FOR("Kokkos on CUDA");
    policies_ = kokkos_example("kokkos_policies");
    R3_REQUIRE_KOKKOS_EXAMPLE(policies_);
    capture_ = (dir_ / "matvec.h5").string();
    auto rec = record(capture_);
    ASSERT_EQ(rec.exit_code, 0) << rec.out << rec.err;
  }

  // Records policies::matvec of `kokkos_policies 64 3` into `capture`; with `apply`, under
  // `r3 apply RESULT --`, the application asked to hand its AUTO team shapes to the tool.
  test::ProcessResult record(const std::string& capture, const std::string& apply = "") {
    std::vector<std::string> argv;
    if (!apply.empty()) argv = {R3_TEST_R3, "apply", apply, "--"};
    for (std::string a : {"record", "--kokkos", "-k", "policies::matvec", "--launches", "1"})
      argv.push_back(a);
    argv.insert(argv.begin() + (apply.empty() ? 0 : 4), R3_TEST_R3);
    for (const std::string& a : {std::string("-o"), capture, std::string("--"), policies_,
                                 std::string("64"), std::string("3")})
      argv.push_back(a);
    if (!apply.empty()) argv.push_back("--kokkos-tune-internals");
    return test::run_process(argv, std::chrono::seconds(300));
  }

  test::ProcessResult replay(const std::string& block) {
    std::vector<std::string> argv = {R3_TEST_R3, "replay", capture_, "-k", "policies::matvec"};
    if (!block.empty()) argv.insert(argv.end(), {"--block", block});
    return test::run_process(argv, std::chrono::seconds(300));
  }

  static std::string block_of(const std::string& inspect) {
    std::smatch m;
    return std::regex_search(inspect, m, std::regex(R"(block (\d+x\d+x\d+))")) ? m[1].str() : "";
  }

  test::TempDir dir_;
  std::string policies_, capture_;
};

TEST_F(KokkosCudaTeams, ATeamKernelReplaysWithTheTeamShapesKokkosCanChoose) {
  auto inspect = test::run_process({R3_TEST_R3, "inspect", capture_});
  EXPECT_TRUE(contains(inspect.out, "label      policies::matvec")) << inspect.out;
  auto recorded = replay("");
  EXPECT_EQ(recorded.exit_code, 0) << recorded.out << recorded.err;
  EXPECT_TRUE(contains(recorded.out, "1 launch(es) verified")) << recorded.out;
  // (vector length, team size, 1): the closure's team size and shared memory rewritten.
  for (const char* shape : {"32,8,1", "4,64,1", "1,1024,1", "8,2,1", "1,1,1"}) {
    auto team = replay(shape);
    EXPECT_EQ(team.exit_code, 0) << shape << "\n" << team.out << team.err;
    EXPECT_TRUE(contains(team.out, "1 launch(es) verified")) << shape << "\n" << team.out;
  }
  auto no_team = replay("3,8,1");
  EXPECT_NE(no_team.exit_code, 0);
  EXPECT_TRUE(contains(no_team.out + no_team.err, "is no team shape of this Kokkos TeamPolicy"))
      << no_team.out << no_team.err;
}

TEST_F(KokkosCudaTeams, TheTunedTeamRunsInTheApplicationThroughKokkosTeamSizeTuner) {
  const auto results = dir_ / "results";
  auto job = tune_kokkos_kernel(dir_.path(), capture_, "policies::matvec");
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_TRUE(contains(job.err, "a TeamPolicy kernel: its team size and vector length are"))
      << job.err;

  // The block the application runs with under r3 apply, as the recorder sees it launched.
  const std::string best = text_of(results / "policies__matvec" / "best.yaml");
  std::smatch block;
  ASSERT_TRUE(std::regex_search(best, block, std::regex(R"(block: \[(\d+), (\d+), 1\])"))) << best;
  const std::string applied_capture = (dir_ / "applied.h5").string();
  auto applied = record(applied_capture, results.string());
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  EXPECT_TRUE(contains(applied.err, "Kokkos' team-size tuner allows it")) << applied.err;
  auto inspect = test::run_process({R3_TEST_R3, "inspect", applied_capture});
  EXPECT_EQ(block_of(inspect.out), block[1].str() + "x" + block[2].str() + "x1")
      << best << applied.err << inspect.out;
  EXPECT_TRUE(contains(applied.err, "applied policies::matvec_team_size")) << applied.err;

  // Its result is the application's.
  auto plain = test::run_process({policies_, "64", "3"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  auto checksum = [](const std::string& out) {
    const auto at = out.find("policies::matvec on");
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_FALSE(checksum(plain.out).empty()) << plain.out;
  EXPECT_EQ(checksum(applied.out), checksum(plain.out));
}

}  // namespace
}  // namespace r3::replay
