// `r3 apply RESULT -- APP` on unmodified CUDA applications (libr3apply_cuda.so): the winner's
// code and launch shape in place of the application's kernel, the application's output and exit
// status unchanged, and each kernel that cannot be substituted left to the application. Needs a
// GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "r3/error.hpp"
#include "r3/run_database.hpp"
#include "r3/winner_code_file.hpp"
#include "require_gpu.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace r3::replay {
namespace {

using test::contains;

#define R3_REQUIRE_GPU() R3_REQUIRE_GPU_FOR("r3 apply on a CUDA application")

const std::string kHeatKernel = "_Z9heat_stepPKfPfif";

std::string example_source(const std::string& file) {
  return std::string(R3_TEST_SOURCE_DIR) + "/examples/cuda/" + file;
}

// The line the heat application prints: its result.
std::string total_heat(const std::string& out) {
  const auto at = out.find("heat after");
  return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

class CudaApply : public ::testing::Test {
 protected:
  void SetUp() override {
    R3_REQUIRE_GPU();
    capture_ = (dir_ / "heat.h5").string();
    auto rec = test::run_process({R3_TEST_R3, "record", "-o", capture_, "-k", "heat_step",
                                  "--launches", "1", "--", R3_TEST_CUDA_HEAT, "512", "2"},
                                 std::chrono::seconds(300));
    ASSERT_EQ(rec.exit_code, 0) << rec.out << rec.err;
  }

  // A result as a tuning run writes it: comments, then the tune.yaml that replays the winner.
  std::string result(const std::string& name, const std::string& notes, const std::string& source,
                     const std::string& block) {
    const std::string file = (dir_ / name).string();
    std::ofstream(file) << notes << "capture: \"" << capture_ << "\"\nbackend: cuda\nkernels:\n"
                        << "  - name: heat_step\n    source: \"" << source << "\"\n"
                        << "    entry: heat_step\n"
                        << (block.empty() ? "" : "    block: " + block + "\n");
    return file;
  }

  // A "winner" with the kernel's signature that doubles the diffusion and adds heat.
  std::string write_wrong_winner() {
    const auto file = dir_ / "wrong_heat.cuh";
    std::ofstream(file)
        << "__global__ void heat_step(const float* __restrict__ in, float* __restrict__ out,\n"
           "                          int n, float alpha) {\n"
           "  const int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "  const int y = blockIdx.y * blockDim.y + threadIdx.y;\n"
           "  if (x < 1 || y < 1 || x >= n - 1 || y >= n - 1) return;\n"
           "  const int i = y * n + x;\n"
           "  out[i] = in[i] + 2.0f * alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] -\n"
           "                                   4.0f * in[i]) + 1.0f;\n"
           "}\n";
    return file.string();
  }

  test::ProcessResult apply(const std::string& result, const std::string& application) {
    return test::run_process({R3_TEST_R3, "apply", result, "--", application, "512", "20"},
                             std::chrono::seconds(300));
  }

  test::TempDir dir_;
  std::string capture_;
};

TEST_F(CudaApply, TheWinnerRunsInTheUnmodifiedApplicationWithItsBlockAndTheSameResult) {
  const std::string best =
      result("best.yaml", "# confirmed speedup 1.25x (1.2-1.3 over 10 neighbouring pairs)\n",
             example_source("heat_kernels.cuh"), "[32, 8, 1]");
  for (const char* application : {R3_TEST_CUDA_HEAT, R3_TEST_CUDA_HEAT_SHARED}) {
    auto plain = test::run_process({application, "512", "20"}, std::chrono::seconds(120));
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    auto applied = apply(best, application);
    ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
    EXPECT_FALSE(total_heat(plain.out).empty()) << plain.out;
    EXPECT_EQ(total_heat(applied.out), total_heat(plain.out)) << applied.err;
    EXPECT_TRUE(contains(applied.err, "1.25x confirmed in replay")) << applied.err;
    EXPECT_TRUE(contains(applied.err,
                         "kernel " + kHeatKernel + ": 20 launch(es) ran the winner (block 32x8x1)"))
        << application << ":\n"
        << applied.err;
  }
}

TEST_F(CudaApply, AWinnerThatChangesTheResultChangesItInTheApplication) {
  // Proof that the winner's code is what runs: a "winner" that computes something else.
  const std::string best = result("best.yaml", "", write_wrong_winner(), "");
  auto plain = test::run_process({R3_TEST_CUDA_HEAT, "512", "20"}, std::chrono::seconds(120));
  auto applied = apply(best, R3_TEST_CUDA_HEAT);
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_NE(total_heat(applied.out), total_heat(plain.out)) << applied.err;
  EXPECT_TRUE(contains(applied.err, "20 launch(es) ran the winner")) << applied.err;
}

TEST_F(CudaApply, CheckCatchesAPlantedWrongWinnerAndTheApplicationKeepsItsOwnResult) {
  const std::string wrong = result("wrong.yaml", "", write_wrong_winner(), "");
  auto plain = test::run_process({R3_TEST_CUDA_HEAT, "512", "20"}, std::chrono::seconds(120));
  auto checked = test::run_process(
      {R3_TEST_R3, "apply", wrong, "--check", "--", R3_TEST_CUDA_HEAT, "512", "20"},
      std::chrono::seconds(300));
  ASSERT_EQ(checked.exit_code, 0) << checked.err;
  EXPECT_EQ(total_heat(checked.out), total_heat(plain.out)) << checked.err;
  EXPECT_TRUE(contains(checked.err, "--check: 0x")) << checked.err;
  EXPECT_TRUE(contains(checked.err, "f32): ")) << "the output grid, typed from 'float*'\n"
                                               << checked.err;
  EXPECT_TRUE(contains(checked.err, "differ from the application's kernel's results"))
      << checked.err;
  EXPECT_TRUE(contains(checked.err, "1 launch(es) ran the winner, 19 the application's code"))
      << checked.err;

  // The right winner passes its check and runs every time.
  const std::string right =
      result("right.yaml", "", example_source("heat_kernels.cuh"), "[32, 8, 1]");
  auto passed = test::run_process(
      {R3_TEST_R3, "apply", right, "--check", "--", R3_TEST_CUDA_HEAT, "512", "20"},
      std::chrono::seconds(300));
  ASSERT_EQ(passed.exit_code, 0) << passed.err;
  EXPECT_EQ(total_heat(passed.out), total_heat(plain.out)) << passed.err;
  EXPECT_TRUE(contains(passed.err,
                       "--check: the winner's results match the application's "
                       "kernel's"))
      << passed.err;
  EXPECT_TRUE(contains(passed.err, "20 launch(es) ran the winner (block 32x8x1)")) << passed.err;
}

// A driver-API program that loads PTX it compiled with NVRTC and sets a __constant__ through
// cuModuleGetGlobal: the winner (its recorded code with a new block) has its own copy of the
// constant, which gets the application's value before each launch.
TEST_F(CudaApply, ADriverApiApplicationRunsTheWinnerWithTheApplicationsModuleVariables) {
  const std::string capture = (dir_ / "driver.h5").string();
  auto rec = test::run_process({R3_TEST_R3, "record", "-o", capture, "-k", "scaled_axpy",
                                "--launches", "1", "--", R3_TEST_CUDA_DRIVER_API, "100000", "2"},
                               std::chrono::seconds(300));
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  const std::string best = (dir_ / "driver.yaml").string();
  std::ofstream(best) << "capture: \"" << capture << "\"\nbackend: cuda\nkernels:\n"
                      << "  - name: scaled_axpy\n    block: [128, 1, 1]\n";
  auto sum = [](const std::string& out) {
    const auto at = out.find("driver api:");
    return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
  };
  auto plain =
      test::run_process({R3_TEST_CUDA_DRIVER_API, "100000", "5"}, std::chrono::seconds(60));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  auto applied =
      test::run_process({R3_TEST_R3, "apply", best, "--", R3_TEST_CUDA_DRIVER_API, "100000", "5"},
                        std::chrono::seconds(300));
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_FALSE(sum(plain.out).empty()) << plain.out;
  EXPECT_EQ(sum(applied.out), sum(plain.out)) << applied.err;
  EXPECT_TRUE(contains(applied.err, "1 module variable(s) shared with the application's module"))
      << applied.err;
  EXPECT_TRUE(contains(applied.err, "5 launch(es) ran the winner (block 128x1x1)")) << applied.err;
}

TEST_F(CudaApply, WhatCannotBeSubstitutedLeavesTheApplicationItsOwnKernel) {
  auto plain = test::run_process({R3_TEST_CUDA_HEAT, "512", "20"}, std::chrono::seconds(120));
  // A result that says the application's code was fastest.
  const std::string keep =
      result("keep.yaml", "# keep the application's code: no candidate was faster than it\n",
             example_source("heat_kernels.cuh"), "[32, 8, 1]");
  auto kept = apply(keep, R3_TEST_CUDA_HEAT);
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_EQ(total_heat(kept.out), total_heat(plain.out));
  EXPECT_TRUE(contains(kept.err, "keeps the application's code: no candidate was faster"))
      << kept.err;
  EXPECT_TRUE(contains(kept.err, "no kernel to substitute")) << kept.err;

  // A winner whose parameters are not the application kernel's (one more): refused at its first
  // launch, and the application's kernel runs every time.
  std::ofstream(dir_ / "other_signature.cuh")
      << "__global__ void heat_step(const float* in, float* out, int n, float alpha, int extra) {\n"
         "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n * n) out[i] = 0.0f;\n"
         "}\n";
  const std::string other = result("other.yaml", "", (dir_ / "other_signature.cuh").string(), "");
  auto refused = apply(other, R3_TEST_CUDA_HEAT);
  ASSERT_EQ(refused.exit_code, 0) << refused.err;
  EXPECT_EQ(total_heat(refused.out), total_heat(plain.out)) << refused.err;
  EXPECT_TRUE(contains(refused.err, "are not laid out as the application's kernel's"))
      << refused.err;
  EXPECT_TRUE(contains(refused.err, "0 launch(es) ran the winner, 20 the application's code"))
      << refused.err;

  // The application's own exit status comes back (it refuses N < 3).
  auto failing = test::run_process({R3_TEST_R3, "apply", keep, "--", R3_TEST_CUDA_HEAT, "2"},
                                   std::chrono::seconds(120));
  EXPECT_NE(failing.exit_code, 0);
  auto failing_plain = test::run_process({R3_TEST_CUDA_HEAT, "2"}, std::chrono::seconds(60));
  EXPECT_EQ(failing.exit_code, failing_plain.exit_code) << failing.err;
}

// A tuning run keeps the code its winner confirmation measured (run.h5's /codes, best.code and
// best.cubin beside the winner's best.yaml), and r3 apply loads that image rather than compiling
// the result's source again.
TEST_F(CudaApply, TheRunKeepsTheConfirmedCodeAndApplyLoadsThatImage) {
  const auto results = dir_ / "results";
  std::ofstream(dir_ / "tune.yaml")
      << "capture: \"" << capture_ << "\"\nbackend: cuda\nkernels:\n"
      << "  - name: heat_step\n    source: \"" << example_source("heat_kernels.cuh") << "\"\n"
      << "budget:\n  evaluations: 10\n"
      << "timing:\n  repeats: 5\n  confirm_top: 2\n  confirm_rounds: 2\n"
      << "output:\n  directory: \"" << results.string() << "\"\n";
  auto job = test::run_process({R3_TEST_MPIEXEC, "-n", "2", "--oversubscribe", R3_TEST_R3_MPI,
                                (dir_ / "tune.yaml").string()},
                               std::chrono::seconds(600));
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  const run::RunRecord record = run::read_run_database(results / "run.h5");
  ASSERT_FALSE(record.codes.empty()) << job.err;
  for (const run::CodeRecord& code : record.codes) {
    bool confirmed = false;
    for (const run::ConfirmationRecord& c : record.confirmations)
      confirmed = confirmed || c.candidate == code.candidate;
    EXPECT_TRUE(confirmed) << "candidate " << code.candidate;
    EXPECT_TRUE(
        code.image.starts_with("\x7f"
                               "ELF"))
        << "a cubin";
    EXPECT_TRUE(code.architecture.starts_with("sm_")) << code.architecture;
    EXPECT_EQ(code.function, kHeatKernel);
  }
  // The winner's directory holds its code unless the application's code stays.
  std::ifstream winner_yaml(results / "heat_step" / "best.yaml");
  const std::string winner{std::istreambuf_iterator<char>(winner_yaml), {}};
  const bool keep = winner.find("# keep the application's code") != std::string::npos;
  EXPECT_EQ(std::filesystem::exists(results / "heat_step" / "best.code"), !keep) << winner;

  // Proof that the stored image runs: a result whose source is the wrong winner, with the code
  // of a confirmed candidate beside it, gives the application's result.
  const auto stored = dir_ / "stored";
  std::filesystem::create_directories(stored);
  const std::string best = (stored / "best.yaml").string();
  std::filesystem::copy_file(result("source.yaml", "", write_wrong_winner(), "[32, 8, 1]"), best);
  write_winner_code(stored, record.codes.front());
  auto plain = test::run_process({R3_TEST_CUDA_HEAT, "512", "20"}, std::chrono::seconds(120));
  auto applied = apply(best, R3_TEST_CUDA_HEAT);
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_EQ(total_heat(applied.out), total_heat(plain.out)) << applied.err;
  EXPECT_TRUE(contains(applied.err, "the code of candidate " +
                                        std::to_string(record.codes.front().candidate) +
                                        " as it was confirmed"))
      << applied.err;
  EXPECT_TRUE(contains(applied.err, "20 launch(es) ran the winner (block 32x8x1)")) << applied.err;

  // An image that is not the one the run kept is refused before the application starts.
  std::ofstream(stored / "best.cubin", std::ios::binary | std::ios::app) << "tampered";
  auto refused = apply(best, R3_TEST_CUDA_HEAT);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_TRUE(contains(refused.err, "does not match the hash")) << refused.err;
  EXPECT_FALSE(contains(refused.out, "heat after")) << "the application ran";
}

}  // namespace
}  // namespace r3::replay
