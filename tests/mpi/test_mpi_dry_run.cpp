// r3-mpi under mpirun -n 3: rank 0 alone reads and reports, every rank leaves with the same
// status, and a bad configuration ends the job instead of hanging it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "r3/version.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using r3::test::ProcessResult;
using r3::test::TempDir;

using r3::test::count;

class MpiDryRun : public ::testing::Test {
 protected:
  void SetUp() override {
    ProcessResult made = r3::test::record_demo(R3_TEST_R3, R3_TEST_EXAMPLE_STENCIL,
                                               (dir_ / "demo.h5").string(), 64, 2);
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  ProcessResult mpirun(const std::string& yaml, std::vector<std::string> flags) {
    std::ofstream(dir_ / "tune.yaml") << yaml;
    std::vector<std::string> argv = {
        R3_TEST_MPIEXEC,   "-n",           "3",
        "--oversubscribe", R3_TEST_R3_MPI, (dir_ / "tune.yaml").string()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return r3::test::run_process(argv, std::chrono::seconds(120),
                                 {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
  }
  TempDir dir_;
};

TEST_F(MpiDryRun, OnlyRankZeroPrintsTheConfiguration) {
  if (!r3::build_has_llvm()) GTEST_SKIP() << "the demo's host backend needs LLVM in this build";
  ProcessResult result = mpirun("capture: demo.h5\nkernels: [stencil2d]\n", {"--dry-run"});
  ASSERT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(count(result.out, "# r3-mpi --dry-run:"), 1) << result.out;
  EXPECT_EQ(count(result.out, "3 rank(s): 1 searcher, 2 evaluator(s)"), 1) << result.out;
}

TEST_F(MpiDryRun, BadConfigurationEndsEveryRankWithOneMessage) {
  ProcessResult result =
      mpirun("capture: demo.h5\nkernels: [stencil2d]\nbudget:\n  evaluations: -1\n", {"--dry-run"});
  ASSERT_FALSE(result.timed_out) << "the job hung";
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_EQ(count(result.err, "tune.yaml:4:16: budget.evaluations: must lie in"), 1) << result.err;
  EXPECT_EQ(count(result.err, "error:"), 1) << result.err;
}

TEST_F(MpiDryRun, UnknownKernelEndsEveryRank) {
  ProcessResult result = mpirun("capture: demo.h5\nkernels: [saxpy]\n", {"--dry-run"});
  ASSERT_FALSE(result.timed_out) << "the job hung";
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(count(result.err, "kernel 'saxpy' is not in this capture"), 1) << result.err;
}

// A set-up whose original cannot compile is refused before any budget is spent: --dry-run
// compiles the original in a sandbox and names the kernel, the compiler and the first diagnostic;
// a run stops after its first generation with the same error.
TEST_F(MpiDryRun, AnOriginalThatDoesNotCompileIsRefusedByTheDryRunAndTheRun) {
  if (!r3::build_has_llvm()) GTEST_SKIP() << "the demo's host backend needs LLVM in this build";
  fs::copy_file(std::string(R3_TEST_DATA_DIR) + "/variants/stencil_syntax_error.cpp",
                dir_ / "broken.cpp");
  const std::string yaml =
      "capture: demo.h5\nkernels:\n  - name: stencil2d\n    source: broken.cpp\n"
      "budget:\n  evaluations: 40\n";
  ProcessResult dry = mpirun(yaml, {"--dry-run"});
  ASSERT_FALSE(dry.timed_out) << "the job hung";
  EXPECT_EQ(dry.exit_code, 1) << dry.out << dry.err;
  EXPECT_EQ(count(dry.err, "kernels[0].source: kernel 'stencil2d': its source broken.cpp at its "
                           "defaults does not compile with Clang"),
            1)
      << dry.err;
  EXPECT_NE(dry.err.find("error:"), std::string::npos) << "the first diagnostic" << dry.err;

  ProcessResult run = mpirun(yaml, {});
  ASSERT_FALSE(run.timed_out) << "the job hung";
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_EQ(count(run.err, "does not compile with Clang"), 1) << run.err;
  EXPECT_EQ(count(run.err, "generation 1:"), 0) << "the budget was not spent: " << run.err;
}

}  // namespace
