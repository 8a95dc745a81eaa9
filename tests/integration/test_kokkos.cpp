// The Kokkos Tools connector in a real Kokkos application (examples/kokkos/heat.cpp, built
// against the Kokkos CMake found: Debian's Kokkos 3.4, Serial, in CI): labels reach it, and
// `r3 apply` runs the unchanged application with the tuned values of a result.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "r3/capture.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

using r3::test::contains;
using r3::test::ProcessResult;
using r3::test::run_process;
using r3::test::TempDir;

constexpr bool kKokkosHasTuning = R3_TEST_KOKKOS_HAS_TUNING;

class Kokkos : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  // `r3 apply RESULT -- kokkos_heat 64 5`, with the preload a Kokkos without tuning needs.
  ProcessResult apply(const std::string& result, std::vector<std::string> extra_env = {}) {
    std::vector<std::string> args = {R3_TEST_R3, "apply", result};
    if (!kKokkosHasTuning) args.push_back("--kokkos-without-tuning");
    for (const char* a : {"--", R3_TEST_KOKKOS_HEAT, "64", "5"}) args.push_back(a);
    return run_process(args, std::chrono::seconds(120), extra_env);
  }
  ProcessResult plain() { return run_process({R3_TEST_KOKKOS_HEAT, "64", "5"}); }
  static std::string total_heat(const std::string& out) {
    auto at = out.find("total heat");
    return at == std::string::npos ? std::string("(none)") : out.substr(at);
  }
  TempDir dir_;
};

const char* kResult = R"(# r3 result for kernel 'heat::step'
capture: "heat.h5"
backend: cuda
kernels:
  - name: "heat::step"
    block: [32, 4, 1]
  - name: "heat::residual"
    defines: {"chunk_size": "256"}
)";

TEST_F(Kokkos, TheConnectorReceivesTheLabelsOfEveryParallelRegion) {
  // Loaded the way Kokkos 3 (KOKKOS_PROFILE_LIBRARY) and Kokkos 4 (KOKKOS_TOOLS_LIBS) look.
  ProcessResult r = run_process(
      {R3_TEST_KOKKOS_HEAT, "64", "5"}, std::chrono::seconds(120),
      {std::string("KOKKOS_PROFILE_LIBRARY=") + R3_TEST_KOKKOS_CONNECTOR,
       std::string("KOKKOS_TOOLS_LIBS=") + R3_TEST_KOKKOS_CONNECTOR, "R3_LOG_LEVEL=debug"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "       5  heat::step\n")) << r.err;
  EXPECT_TRUE(contains(r.err, "       1  heat::residual\n")) << r.err;
  EXPECT_TRUE(contains(r.err, "       1  heat::init\n")) << r.err;
  EXPECT_FALSE(contains(r.err, "tuning request")) << "no result was given:\n" << r.err;

  // `r3 record --kokkos` loads it too (this application records nothing: no host capture).
  ProcessResult rec = run_process({R3_TEST_R3, "record", "--kokkos", "-o", (dir_ / "c.h5").string(),
                                   "--", R3_TEST_KOKKOS_HEAT, "64", "5"},
                                  std::chrono::seconds(120), {"R3_LOG_LEVEL=debug"});
  EXPECT_EQ(rec.exit_code, 1) << rec.err;
  EXPECT_TRUE(contains(rec.err, "       5  heat::step\n")) << rec.err;
  EXPECT_TRUE(contains(rec.err, "nothing was recorded")) << rec.err;
}

TEST_F(Kokkos, ApplyRunsTheUnchangedApplicationWithTheTunedValues) {
  ProcessResult before = plain();
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_TRUE(contains(before.out, "heat::step tile 8 x 8\n")) << before.out;
  EXPECT_TRUE(contains(before.out, "heat::residual chunk_size 1\n")) << before.out;

  ProcessResult r = apply(write("best.yaml", kResult));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "heat::step tile 32 x 4\n")) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "heat::residual chunk_size 256\n")) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "applied heat::step_tile_size_0 = 32 (kernel 'heat::step'")) << r.err;
  EXPECT_TRUE(contains(r.err, "applied chunk_size = 256 (kernel 'heat::residual'")) << r.err;
  EXPECT_TRUE(contains(r.err, "3 value(s) applied, 0 refused, 0 left at Kokkos' default")) << r.err;
  // The tuned run computes what the untuned one does.
  EXPECT_EQ(total_heat(r.out), total_heat(before.out));
}

TEST_F(Kokkos, AValueTheVariableDoesNotAllowLeavesKokkosDefault) {
  ProcessResult r = apply(write("best.yaml", R"(kernels:
  - name: "heat::step"
    block: [48, 4, 1]
  - name: "heat::residual"
    defines: {"chunk_size": "many"}
)"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "heat::step tile 8 x 4\n")) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "heat::residual chunk_size 1\n")) << r.out;
  EXPECT_TRUE(contains(r.err, "not applied: heat::step_tile_size_0 = 48 (kernel 'heat::step', " +
                                  (dir_ / "best.yaml").string() +
                                  "): not one of the candidates {1, 2, 4, 8, 16, 32, 64}; Kokkos' "
                                  "default is kept"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "not applied: chunk_size = many")) << r.err;
  EXPECT_TRUE(contains(r.err, "1 value(s) applied, 2 refused")) << r.err;
}

TEST_F(Kokkos, AResultThatCannotBeUsedIsRefusedBeforeTheApplicationStarts) {
  std::string bad = write("best.yaml", "kernels:\n  - name: \"heat::step\"\n    block: [0]\n");
  ProcessResult r = apply(bad);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, bad + ":3:12: kernels[].block of 'heat::step': expected [x, y, z]"))
      << r.err;
  EXPECT_FALSE(contains(r.out, "heat::step tile")) << "the application ran:\n" << r.out;

  ProcessResult missing = apply((dir_ / "nowhere.yaml").string());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(contains(missing.err, "nowhere.yaml: no such file or directory")) << missing.err;

  ProcessResult no_app = run_process({R3_TEST_R3, "apply", write("ok.yaml", kResult)});
  EXPECT_EQ(no_app.exit_code, 2) << no_app.err;

  // The CUDA-only option is refused for Kokkos tuned values rather than ignored.
  ProcessResult cuda_only = run_process({R3_TEST_R3, "apply", write("ok.yaml", kResult), "--check",
                                         "--", R3_TEST_KOKKOS_HEAT, "64", "5"});
  EXPECT_EQ(cuda_only.exit_code, 2) << cuda_only.err;
  EXPECT_TRUE(contains(cuda_only.err, "r3 apply --check: for a CUDA application's result"))
      << cuda_only.err;
  EXPECT_FALSE(contains(cuda_only.out, "heat::step tile")) << "the application ran";
}

// --original: the baseline an applied run is compared with, the connector loaded without the
// result.
TEST_F(Kokkos, OriginalRunsTheApplicationWithTheConnectorAnsweringNothing) {
  std::vector<std::string> args = {R3_TEST_R3, "apply", write("ok.yaml", kResult), "--original"};
  if (!kKokkosHasTuning) args.push_back("--kokkos-without-tuning");
  for (const char* a : {"--", R3_TEST_KOKKOS_HEAT, "64", "5"}) args.push_back(a);
  ProcessResult r = run_process(args, std::chrono::seconds(120));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "heat::step tile 8 x 8\n")) << "Kokkos' own tile\n" << r.out;
  EXPECT_TRUE(contains(r.err, "the connector is loaded without the result")) << r.err;
  EXPECT_TRUE(contains(r.err, "the application ran for")) << r.err;
  EXPECT_FALSE(contains(r.err, "applied heat::step")) << r.err;
}

TEST_F(Kokkos, AResultDamagedAfterTheStartLeavesTheApplicationRunning) {
  // The connector reads the result when Kokkos starts; a damaged one costs the tuned values,
  // never the run.
  ProcessResult r = run_process(
      {R3_TEST_KOKKOS_HEAT, "64", "5"}, std::chrono::seconds(120),
      {std::string("KOKKOS_PROFILE_LIBRARY=") + R3_TEST_KOKKOS_CONNECTOR,
       std::string("KOKKOS_TOOLS_LIBS=") + R3_TEST_KOKKOS_CONNECTOR,
       "R3_KOKKOS_TUNED=" + write("best.yaml", "kernels: {"),
       "LD_PRELOAD=" +
           (std::filesystem::path(R3_TEST_KOKKOS_CONNECTOR).parent_path() / "libr3kokkos_compat.so")
               .string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "heat::step tile 8 x 8\n")) << r.out;
  EXPECT_TRUE(
      contains(r.err, "r3 kokkos: cannot use the tuned values: " + (dir_ / "best.yaml").string()))
      << r.err;
}

TEST_F(Kokkos, WithoutTheCompatLibraryAKokkosWithoutTuningIsExplained) {
  if (kKokkosHasTuning) GTEST_SKIP() << "this Kokkos passes tuning requests to its tools";
  ProcessResult r = run_process(
      {R3_TEST_R3, "apply", write("best.yaml", kResult), "--", R3_TEST_KOKKOS_HEAT, "64", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "heat::step tile 8 x 8\n")) << r.out;
  EXPECT_TRUE(contains(r.err, "the application declared no tuning variable")) << r.err;
  EXPECT_TRUE(contains(r.err, "r3 apply --kokkos-without-tuning")) << r.err;
}

// A CUDA capture of a Kokkos TeamPolicy kernel with AUTO team size and vector length (the
// closure as Kokkos 4 lays it out; no code image), for r3 apply's look-up of the team limits.
void write_team_capture(const std::filesystem::path& file) {
  using namespace r3::capture;
  std::vector<std::byte> args;
  auto put = [&](std::int64_t v, std::size_t bytes) {
    const std::size_t at = args.size();
    args.resize(at + bytes);
    std::memcpy(args.data() + at, &v, bytes);
  };
  for (int i = 0; i < 6; ++i) put(0x7f0000001000 + i, 8);  // functor, execution space
  for (std::int64_t v : {4096, -1, 1, 0}) put(v, 4);       // policy: league, AUTO team, vector
  for (int i = 0; i < 4; ++i) put(0, 8);                   // scratch sizes
  put(32, 4);                                              // chunk
  put(0x0101, 4);                                          // AUTO team size and vector length
  for (std::int64_t v : {4096, 128, 1, 8 * 130, 0, 0}) put(v, 4);  // the closure
  for (int i = 0; i < 6; ++i) put(0, 8);
  CaptureInfo info;
  info.device.backend = "cuda";
  info.device.architecture = "sm_90";
  CaptureWriter writer = CaptureWriter::create(file, info);
  Kernel kernel;
  kernel.name = "_ZN6Kokkos4Impl33cuda_parallel_launch_local_memory";
  kernel.demangled_name =
      "void Kokkos::Impl::cuda_parallel_launch_local_memory<Kokkos::Impl::ParallelFor<main::"
      "{lambda(Kokkos::Impl::CudaTeamMember const&)#1}, Kokkos::TeamPolicy<>, Kokkos::Cuda>>()";
  kernel.kokkos_label = "policies::matvec";
  kernel.params.push_back({0, args.size(), false, ""});
  const std::size_t id = writer.add_kernel(kernel);
  Launch launch;
  launch.grid = {4096, 1, 1};
  launch.block = {1, 128, 1};
  launch.shared_memory_bytes = 8 * 130;
  launch.args = args;
  writer.add_launch(id, launch);
  writer.close();
}

// The team limits r3 apply hands the connector come from loading the recorded kernel on a GPU;
// where that cannot be done, the tuner goes unanswered, and the application still runs.
TEST_F(Kokkos, TeamLimitsThatCannotBeFoundHereCostTheTunersAnswersNotTheRun) {
  write_team_capture(dir_ / "matvec.h5");
  const std::string best =
      write("best.yaml", "capture: \"" + (dir_ / "matvec.h5").string() +
                             "\"\nbackend: cuda\nkernels:\n  - name: \"policies::matvec\"\n"
                             "    block: [1, 64, 1]\n");
  ProcessResult r = run_process({R3_TEST_R3, "apply", best, "--", "true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "r3 apply: Kokkos kernel 'policies::matvec': its recorded code does "
                       "not load here"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "team_size=64")) << r.err;
  EXPECT_TRUE(contains(r.err, "the application ran for")) << r.err;
}

}  // namespace
