// The CUDA recorder (libr3record_cuda.so through `r3 record`) on an unmodified application built
// with plain nvcc and the static CUDA runtime (examples/cuda/heat.cu), then replayed by the CUDA
// backend as recorded and as a variant compiled from source. Needs a GPU.
#include <gtest/gtest.h>

#include "r3/capture.hpp"
#include "require_gpu.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace r3::replay {
namespace {

using test::contains;

#define R3_REQUIRE_GPU() R3_REQUIRE_GPU_FOR("the CUDA recorder")

test::ProcessResult record(const std::vector<std::string>& options, const std::string& out) {
  std::vector<std::string> argv = {R3_TEST_R3, "record", "-o", out};
  argv.insert(argv.end(), options.begin(), options.end());
  for (const char* a : {"--", R3_TEST_CUDA_HEAT, "512", "4"}) argv.push_back(a);
  return test::run_process(argv, std::chrono::seconds(300));
}

TEST(CudaRecorder, RecordsAnUnmodifiedStaticRuntimeApplicationAndItReplaysVerified) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  const std::string capture = (dir / "heat.h5").string();
  auto rec = record({"-k", "heat_step", "--launches", "2"}, capture);
  ASSERT_EQ(rec.exit_code, 0) << rec.out << rec.err;
  EXPECT_TRUE(contains(rec.out, "total heat")) << "the application's own output:\n" << rec.out;

  auto reader = capture::CaptureReader::open(capture);
  ASSERT_EQ(reader.kernels().size(), 1u) << rec.err;
  const capture::Kernel& k = reader.kernels()[0];
  EXPECT_EQ(k.name, "_Z9heat_stepPKfPfif");
  EXPECT_EQ(k.demangled_name, "heat_step(float const*, float*, int, float)");
  EXPECT_TRUE(k.images.contains("cubin"));
  ASSERT_EQ(k.params.size(), 4u);
  EXPECT_TRUE(k.params[0].is_pointer && k.params[1].is_pointer);
  EXPECT_FALSE(k.params[2].is_pointer || k.params[3].is_pointer);
  // Steps alternate the two grids: two distinct launches, each reaching both grids.
  ASSERT_EQ(k.launches.size(), 2u);
  for (const capture::Launch& l : k.launches) {
    EXPECT_EQ(l.block, (capture::Dim3{16, 16, 1}));
    EXPECT_EQ(l.grid, (capture::Dim3{32, 32, 1}));
    EXPECT_EQ(l.prologue.size(), 2u);
    ASSERT_EQ(l.epilogue.size(), 1u) << "only the output grid changes";
    EXPECT_TRUE(l.app_time_us && *l.app_time_us > 0);
  }
  EXPECT_NE(k.launches[0].epilogue[0].address, k.launches[1].epilogue[0].address);

  auto recorded = test::run_process({R3_TEST_R3, "replay", capture});
  EXPECT_EQ(recorded.exit_code, 0) << recorded.out << recorded.err;
  EXPECT_EQ(test::count(recorded.out, "verified  median"), 2) << recorded.out;
  auto variant =
      test::run_process({R3_TEST_R3, "replay", capture, "--source",
                         std::string(R3_TEST_SOURCE_DIR) + "/examples/cuda/heat_kernels.cuh",
                         "--entry", "heat_step", "--block", "32,8,1", "-n", "5"});
  EXPECT_EQ(variant.exit_code, 0) << variant.out << variant.err;
  EXPECT_EQ(test::count(variant.out, "verified  median"), 2) << variant.out;
}

TEST(CudaRecorder, CaptureAllTakesEveryLiveAllocation) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  const std::string capture = (dir / "all.h5").string();
  auto rec = record({"-k", "heat_boundary", "--capture", "all"}, capture);
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  auto reader = capture::CaptureReader::open(capture);
  ASSERT_EQ(reader.kernels().size(), 1u);
  // The two grids and the partial sums, though the launch reaches only the grids.
  EXPECT_EQ(reader.kernels()[0].launches.at(0).prologue.size(), 3u);
  auto replayed = test::run_process({R3_TEST_R3, "replay", capture});
  EXPECT_EQ(replayed.exit_code, 0) << replayed.out << replayed.err;
}

TEST(CudaRecorder, NoMatchingKernelNamesWhatTheApplicationLaunched) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  auto rec = record({"-k", "no_such_kernel"}, (dir / "none.h5").string());
  EXPECT_EQ(rec.exit_code, 1) << rec.err;
  EXPECT_TRUE(contains(rec.out, "total heat")) << "the application ran to its end";
  EXPECT_TRUE(contains(rec.err, "no launch was recorded: no kernel matched 'no_such_kernel'"))
      << rec.err;
  EXPECT_TRUE(contains(rec.err, "_Z9heat_stepPKfPfif (4)")) << rec.err;
}

}  // namespace
}  // namespace r3::replay
