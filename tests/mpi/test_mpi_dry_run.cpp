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
    return mpirun_in({}, dir_ / "tune.yaml", yaml, std::move(flags));
  }
  // Writes `yaml` to `yaml_path` and runs r3-mpi on it under mpirun -n 3, from
  // `working_directory` (empty: the test's own).
  ProcessResult mpirun_in(const fs::path& working_directory, const fs::path& yaml_path,
                          const std::string& yaml, std::vector<std::string> flags) {
    std::ofstream(yaml_path) << yaml;
    std::vector<std::string> argv;
    if (!working_directory.empty())
      argv = {"/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh",
              working_directory.string()};
    argv.insert(argv.end(), {R3_TEST_MPIEXEC, "-n", "3", "--oversubscribe", R3_TEST_R3_MPI,
                             yaml_path.string()});
    argv.insert(argv.end(), flags.begin(), flags.end());
    return r3::test::run_process(argv, std::chrono::seconds(120),
                                 {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
  }
  // The demo's stencil (the kernel demo.h5 holds), reading `header` and computing each point as
  // `update` does.
  static std::string stencil_including(const std::string& header, const std::string& update) {
    return "#include \"" + header +
           "\"\n"
           "extern \"C\" void stencil2d(const float* in, float* out, int n, float alpha, "
           "double* change) {\n"
           "  double sum = 0;\n"
           "  for (int y = 1; y < n - 1; ++y)\n"
           "    for (int x = 1; x < n - 1; ++x) {\n"
           "      int i = y * n + x;\n"
           "      out[i] = " +
           update +
           ";\n"
           "      sum += out[i] > in[i] ? out[i] - in[i] : in[i] - out[i];\n"
           "    }\n"
           "  *change = sum;\n}\n";
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

// A source that includes a header beside it (`#include "helper.h"`, the usual layout) is compiled
// as the application's build compiles it: the header is found in the source's directory, not in
// the directory the job runs in, which holds a helper.h of its own here that must not be read.
// Its diagnostics name the file alone, not the directories above it.
TEST_F(MpiDryRun, QuotedIncludesResolveBesideTheSourceNotInTheWorkingDirectory) {
  if (!r3::build_has_llvm()) GTEST_SKIP() << "the demo's host backend needs LLVM in this build";
  const fs::path sources = dir_ / "application" / "src", job = dir_ / "job", cwd = dir_ / "cwd";
  for (const fs::path& d : {sources, job, cwd}) fs::create_directories(d);
  std::ofstream(sources / "helper.h")
      << "inline float laplacian(const float* in, int i, int n) {\n"
         "  return in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i];\n}\n";
  std::ofstream(sources / "stencil.cpp")
      << stencil_including("helper.h", "in[i] + alpha * laplacian(in, i, n)");
  std::ofstream(cwd / "helper.h") << "#error \"the working directory's helper.h was read\"\n";
  const std::string yaml =
      "capture: ../demo.h5\nkernels:\n  - name: stencil2d\n"
      "    source: ../application/src/stencil.cpp\n"
      "timing:\n  confirm_repeats: 5\n"  // the confirmation is not what this test is about
      "budget:\n  evaluations: 12\n";
  ProcessResult dry = mpirun_in(cwd, job / "tune.yaml", yaml, {"--dry-run"});
  ASSERT_FALSE(dry.timed_out) << "the job hung";
  EXPECT_EQ(dry.exit_code, 0) << dry.out << dry.err;
  EXPECT_EQ(count(dry.out + dry.err, "helper.h"), 0) << dry.out << dry.err;

  // The run: rank 0's mutators parse the source too (had they not found the header, a warning
  // would name it).
  ProcessResult run = mpirun_in(cwd, job / "tune.yaml", yaml, {"--log-level", "debug"});
  ASSERT_FALSE(run.timed_out) << "the job hung";
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(count(run.out + run.err, "helper.h"), 0) << run.err;
  EXPECT_EQ(count(run.err, "generation 0: 12 candidates"), 1) << run.err;

  // A source that does not compile: its diagnostic is quoted by file name.
  fs::copy_file(std::string(R3_TEST_DATA_DIR) + "/variants/stencil_syntax_error.cpp",
                sources / "broken.cpp");
  ProcessResult broken = mpirun_in(cwd, job / "tune.yaml",
                                   "capture: ../demo.h5\nkernels:\n  - name: stencil2d\n"
                                   "    source: ../application/src/broken.cpp\n",
                                   {"--dry-run"});
  ASSERT_FALSE(broken.timed_out) << "the job hung";
  EXPECT_EQ(broken.exit_code, 1) << broken.err;
  EXPECT_GE(count(broken.err, "broken.cpp:7:"), 1) << broken.err;
  EXPECT_EQ(count(broken.err, (dir_ / "application").string()), 0) << broken.err;
}

// --dry-run says what the built-in mutators make of each kernel's source before a budget is
// spent: here a source that reads a header from the kernel's include_dirs and a macro from its
// defines, which the mutators once read bare (no rewrites, and a debug line to say why).
TEST_F(MpiDryRun, SaysWhatTheBuiltInMutatorsMakeOfEachKernelsSource) {
  if (!r3::build_has_llvm()) GTEST_SKIP() << "the demo's host backend needs LLVM in this build";
  fs::create_directories(dir_ / "src");
  fs::create_directories(dir_ / "include");
  std::ofstream(dir_ / "include" / "weights.h") << "#define CENTRE (-4.0f)\n";
  std::ofstream(dir_ / "src" / "stencil.cpp") << stencil_including(
      "weights.h",
      "in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] + CENTRE * in[i]) * UNIT");
  ProcessResult dry = mpirun(
      "capture: demo.h5\nkernels:\n  - name: stencil2d\n    source: src/stencil.cpp\n"
      "    include_dirs: [include]\n    defines: {UNIT: 1.0f}\n",
      {"--dry-run"});
  ASSERT_FALSE(dry.timed_out) << "the job hung";
  EXPECT_EQ(dry.exit_code, 0) << dry.out << dry.err;
  EXPECT_EQ(count(dry.out, "# stencil2d: original (defaults): ok"), 1) << dry.out << dry.err;
  EXPECT_EQ(count(dry.out, "# stencil2d: the built-in mutators rewrite its source "), 1)
      << dry.out << dry.err;
  EXPECT_EQ(count(dry.out, " restrict"), 1) << dry.out;

  // The mutators switched off: nothing is said of them.
  ProcessResult off = mpirun(
      "capture: demo.h5\nkernels:\n  - name: stencil2d\n    source: src/stencil.cpp\n"
      "    include_dirs: [include]\n    defines: {UNIT: 1.0f}\n"
      "search:\n  levels:\n    source:\n      mutators: []\n",
      {"--dry-run"});
  EXPECT_EQ(off.exit_code, 0) << off.out << off.err;
  EXPECT_EQ(count(off.out, "built-in mutators"), 0) << off.out;
}

}  // namespace
