// r3 record -> r3 replay with the example applications, as a user runs them.
#include <gtest/gtest.h>

#include <filesystem>

#include "r3/capture.hpp"
#include "r3/version.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using r3::test::contains;
using r3::test::ProcessResult;
using r3::test::run_process;
using r3::test::TempDir;

const fs::path kVariants = fs::path(R3_TEST_DATA_DIR) / "variants";

class RecordReplay : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!r3::build_has_llvm()) GTEST_SKIP() << "the host backend needs LLVM in this build";
  }
  ProcessResult r3(std::vector<std::string> args, std::vector<std::string> environment = {}) {
    args.insert(args.begin(), R3_TEST_R3);
    return run_process(args, std::chrono::seconds(300), environment);
  }
  // Records `example` with its arguments; returns the capture's path.
  fs::path record(const std::string& example, std::vector<std::string> app_args,
                  const std::string& launches = "2") {
    fs::path capture = dir_ / (fs::path(example).filename().string() + ".h5");
    std::vector<std::string> args = {"record", "-o", capture.string(), "--launches",
                                     launches, "--", example};
    args.insert(args.end(), app_args.begin(), app_args.end());
    ProcessResult result = r3(args);
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    return capture;
  }
  TempDir dir_;
};

TEST_F(RecordReplay, EveryExampleRecordsAndReplaysVerified) {
  struct Example {
    std::string binary;
    std::vector<std::string> args;
    std::string kernel;
    std::size_t launches;
  };
  for (const Example& example :
       {Example{R3_TEST_EXAMPLE_STENCIL, {"128", "4"}, "stencil2d", 2},
        Example{R3_TEST_EXAMPLE_SPMV, {"64", "3"}, "spmv_csr", 1},
        Example{R3_TEST_EXAMPLE_PARTICLES, {"5000", "3"}, "push_particles", 1}}) {
    SCOPED_TRACE(example.kernel);
    fs::path capture = record(example.binary, example.args);
    {
      auto reader = r3::capture::CaptureReader::open(capture);
      ASSERT_TRUE(reader.complete());
      ASSERT_EQ(reader.kernels().size(), 1u);
      EXPECT_EQ(reader.kernels()[0].name, example.kernel);
      EXPECT_EQ(reader.kernels()[0].launches.size(), example.launches);
      EXPECT_TRUE(reader.kernels()[0].images.contains("source"));
      EXPECT_EQ(reader.info().device.backend, "host");
    }
    ProcessResult replay = r3({"replay", capture.string(), "-n", "3"});
    EXPECT_EQ(replay.exit_code, 0) << replay.out << replay.err;
    EXPECT_TRUE(contains(replay.out, "memory    same address") ||
                contains(replay.out, "memory    relocated"))
        << replay.out;
    EXPECT_TRUE(contains(
        replay.out, "result    ok: " + std::to_string(example.launches) + " launch(es) verified"))
        << replay.out;
    EXPECT_FALSE(contains(replay.out, "FAIL")) << replay.out;
  }
}

TEST_F(RecordReplay, RecordReportsWhatItCaptured) {
  fs::path capture = dir_ / "stencil.h5";
  ProcessResult result = r3({"record", "-k", "stencil", "-o", capture.string(), "--launches", "3",
                             "--", R3_TEST_EXAMPLE_STENCIL, "64", "5"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  // Steps alternate the two buffers: only two distinct launches exist.
  EXPECT_TRUE(
      contains(result.err, "r3 record: " + capture.string() + ": 1 kernel(s), 2 launch(es)"))
      << result.err;
  EXPECT_TRUE(contains(result.out, "stencil: 5 steps on 64 x 64")) << result.out;  // app output
}

TEST_F(RecordReplay, VariantsAreVerifiedAndBrokenOnesExplained) {
  fs::path capture = record(R3_TEST_EXAMPLE_STENCIL, {"96", "2"});
  auto replay_variant = [&](const std::string& file, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "replay", capture.string(), "--source", (kVariants / file).string(), "-n", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    return r3(args);
  };

  ProcessResult off_by_one = replay_variant("stencil_off_by_one.cpp");
  EXPECT_EQ(off_by_one.exit_code, 1);
  EXPECT_TRUE(contains(off_by_one.out, "FAIL out  changed, rtol=1e-05 atol=1e-08"))
      << off_by_one.out;
  EXPECT_TRUE(contains(off_by_one.out, "result    wrong result: launch 0: region 'out' differs"))
      << off_by_one.out;

  ProcessResult writes_input = replay_variant("stencil_writes_input.cpp");
  EXPECT_EQ(writes_input.exit_code, 1);
  EXPECT_TRUE(contains(writes_input.out, "FAIL in  untouched: 1 of 9216 elements modified"))
      << writes_input.out;
  EXPECT_TRUE(contains(writes_input.out, "first bad index 97")) << writes_input.out;

  ProcessResult syntax = replay_variant("stencil_syntax_error.cpp");
  EXPECT_EQ(syntax.exit_code, 1);
  EXPECT_TRUE(contains(syntax.out, "compile   FAILED")) << syntax.out;
  EXPECT_TRUE(contains(syntax.out, "stencil_syntax_error.cpp:7:")) << syntax.out;
  EXPECT_TRUE(contains(syntax.out, "result    compile error")) << syntax.out;

  ProcessResult undefined = replay_variant("stencil_tunable.cpp");
  EXPECT_EQ(undefined.exit_code, 1);
  EXPECT_TRUE(contains(undefined.out, "compile with -D UNROLL=<factor>")) << undefined.out;
  ProcessResult tuned =
      replay_variant("stencil_tunable.cpp", {"-D", "UNROLL=4", "--passes", "default<O3>"});
  EXPECT_EQ(tuned.exit_code, 0) << tuned.out;
  EXPECT_TRUE(contains(tuned.out, "variant   " + (kVariants / "stencil_tunable.cpp").string() +
                                      ", passes default<O3>, -DUNROLL=4"))
      << tuned.out;

  ProcessResult pipeline = r3({"replay", capture.string(), "--passes", "function(no-such-pass)"});
  EXPECT_EQ(pipeline.exit_code, 1);
  EXPECT_TRUE(contains(pipeline.out, "invalid pass pipeline 'function(no-such-pass)'"))
      << pipeline.out;
}

TEST_F(RecordReplay, ReplayErrorsNameTheProblem) {
  fs::path capture = record(R3_TEST_EXAMPLE_STENCIL, {"32", "1"});
  ProcessResult unknown = r3({"replay", capture.string(), "-k", "saxpy"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_TRUE(contains(unknown.err, "kernel 'saxpy': is not in this capture; it holds: stencil2d"))
      << unknown.err;
  ProcessResult missing_source = r3({"replay", capture.string(), "--source", "/nonexistent.cpp"});
  EXPECT_EQ(missing_source.exit_code, 1);
  EXPECT_TRUE(contains(missing_source.err, "/nonexistent.cpp: open: source does not exist"))
      << missing_source.err;
}

TEST_F(RecordReplay, RecordSaysWhenNothingMatched) {
  ProcessResult result = r3({"record", "-k", "^saxpy$", "-o", (dir_ / "none.h5").string(), "--",
                             R3_TEST_EXAMPLE_STENCIL, "16", "1"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(
      contains(result.err, "no kernel matched '^saxpy$'; the application called: stencil2d"))
      << result.err;
  EXPECT_TRUE(contains(result.err, "nothing was recorded")) << result.err;
  EXPECT_FALSE(fs::exists(dir_ / "none.h5"));
}

// A capture file that cannot be created is the reason, not that nothing matched (the kernel did).
TEST_F(RecordReplay, RecordIntoAMissingFolderSaysSoAndNotThatNothingMatched) {
  const fs::path capture = dir_ / "no-such-folder" / "x.h5";
  ProcessResult result = r3({"record", "-k", "stencil2d", "-o", capture.string(), "--",
                             R3_TEST_EXAMPLE_STENCIL, "16", "1"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_TRUE(contains(result.err, "cannot create the capture file")) << result.err;
  EXPECT_TRUE(contains(result.err, "could not be recorded")) << result.err;
  EXPECT_FALSE(contains(result.err, "no kernel matched")) << result.err;
  EXPECT_FALSE(fs::exists(capture));
}

TEST_F(RecordReplay, RecordPassesOnTheApplicationsFailure) {
  ProcessResult failing =
      r3({"record", "-o", (dir_ / "x.h5").string(), "--", R3_TEST_EXAMPLE_STENCIL, "1"});
  EXPECT_EQ(failing.exit_code, 2);  // the application's usage error
  EXPECT_TRUE(contains(failing.err, "the application exited with status 2")) << failing.err;
  ProcessResult missing = r3({"record", "-o", (dir_ / "x.h5").string(), "--", "/nonexistent/app"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(contains(missing.err, "cannot start '/nonexistent/app'")) << missing.err;
}

TEST_F(RecordReplay, UnderMpiEachSelectedRankWritesItsOwnFile) {
  fs::path capture = dir_ / "ranks.h5";
  ProcessResult rank3 =
      r3({"record", "-o", capture.string(), "--", R3_TEST_EXAMPLE_STENCIL, "16", "1"},
         {"SLURM_PROCID=3"});
  EXPECT_EQ(rank3.exit_code, 0) << rank3.err;
  EXPECT_TRUE(fs::exists(dir_ / "ranks.rank3.h5"));
  EXPECT_EQ(r3::capture::CaptureReader::open(dir_ / "ranks.rank3.h5").info().rank, 3);
  ProcessResult skipped = r3({"record", "--ranks", "0,1", "-o", (dir_ / "other.h5").string(), "--",
                              R3_TEST_EXAMPLE_STENCIL, "16", "1"},
                             {"SLURM_PROCID=3"});
  // Under srun a rank that is not selected runs the application and succeeds like it.
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_TRUE(contains(skipped.err, "rank 3 is not among --ranks 0,1; it ran unrecorded"))
      << skipped.err;
  EXPECT_FALSE(fs::exists(dir_ / "other.rank3.h5"));
  // Each rank reports its own file, not the ones its siblings write beside it.
  ProcessResult rank4 =
      r3({"record", "-o", capture.string(), "--", R3_TEST_EXAMPLE_STENCIL, "16", "1"},
         {"SLURM_PROCID=4"});
  EXPECT_EQ(rank4.exit_code, 0) << rank4.err;
  EXPECT_TRUE(contains(rank4.err, "ranks.rank4.h5")) << rank4.err;
  EXPECT_FALSE(contains(rank4.err, "ranks.rank3.h5")) << rank4.err;
}

}  // namespace
