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

class KokkosCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    R3_REQUIRE_GPU_FOR("Kokkos on CUDA");
    const char* dir = std::getenv("R3_TEST_KOKKOS_CUDA_EXAMPLES");
    if (dir == nullptr || !std::filesystem::exists(std::filesystem::path(dir) / "kokkos_heat"))
      GTEST_SKIP() << "Kokkos on CUDA is not tested: set R3_TEST_KOKKOS_CUDA_EXAMPLES to the "
                      "examples examples/kokkos/build_kokkos.sh builds (OUTDIR/examples)";
    heat_ = (std::filesystem::path(dir) / "kokkos_heat").string();
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
  std::ofstream(dir_ / "tune.yaml") << "capture: \"" << capture_ << "\"\nbackend: cuda\n"
                                    << "kernels:\n  - name: \"heat::step\"\n"
                                    << "budget:\n  evaluations: 16\n"
                                    << "timing:\n  repeats: 5\n"
                                    << "output:\n  directory: \"" << results.string() << "\"\n";
  auto job = test::run_process({R3_TEST_MPIEXEC, "-n", "2", "--oversubscribe", R3_TEST_R3_MPI,
                                (dir_ / "tune.yaml").string()},
                               std::chrono::seconds(600));
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_TRUE(contains(job.err, "is the Kokkos kernel 'heat::step'")) << job.err;
  // Only what Kokkos' tuning interface can set is searched: no compiler level.
  std::ifstream csv(results / "candidates.csv");
  const std::string candidates{std::istreambuf_iterator<char>(csv), {}};
  EXPECT_FALSE(contains(candidates, ",compiler,")) << candidates;
  EXPECT_TRUE(contains(candidates, ",launch,")) << candidates;

  std::ifstream best_file(results / "heat__step" / "best.yaml");
  const std::string best{std::istreambuf_iterator<char>(best_file), {}};
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

}  // namespace
}  // namespace r3::replay
