// The parts of the CUDA backend that need no GPU: what variant flags mean, NVRTC compiles (to
// cubins and PTX), the GPU comparison kernels, the Clang/NVPTX path, and the clear refusal of a
// machine without a GPU driver.
#include <gtest/gtest.h>

#include "driver.hpp"
#include "gpu_compare.hpp"
#include "nvrtc_compiler.hpp"
#include "r3/config.hpp"
#include "r3/error.hpp"
#include "r3/replay/backend.hpp"
#if R3_HAVE_LLVM
#include "r3/compiler/cuda_compiler.hpp"
#endif

namespace r3::replay::cuda {
namespace {

const char* kKernel = R"(
#ifndef SCALE
#error SCALE must be defined
#endif
R3_TUNABLE(SCALE, 2, 1 2 4)
__global__ void scale(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = SCALE * sqrtf(in[i]);
}
)";

TEST(CudaFlags, PtxasSettingsAreSeparatedFromNvrtcOptions) {
  CudaFlags flags = split_flags({"-O2", "--maxrregcount=64", "-dlcm=cg", "--use_fast_math"});
  EXPECT_EQ(flags.error, "");
  EXPECT_EQ(flags.jit.opt_level, 2);
  EXPECT_EQ(flags.jit.max_registers, 64);
  EXPECT_EQ(flags.jit.cache_mode, "cg");
  EXPECT_EQ(flags.nvrtc, std::vector<std::string>{"--use_fast_math"});
  EXPECT_NE(split_flags({"-O9"}).error.find("-O0 to -O4"), std::string::npos);
  EXPECT_NE(split_flags({"--maxrregcount=0"}).error.find("1 to 255"), std::string::npos);
  EXPECT_NE(split_flags({"-dlcm=xx"}).error.find("ca or cg"), std::string::npos);
}

TEST(Nvrtc, CompilesACubinAndLowersTheEntryName) {
  CudaFlags flags = split_flags({"-O3", "--maxrregcount=32", "--use_fast_math"});
  NvrtcOutput out = compile_nvrtc("scale.cu", kKernel, "scale",
                                  {{"SCALE", "4"}, {"R3_TUNABLE(...)", ""}}, {}, flags, 90);
  ASSERT_TRUE(out.ok) << out.log;
  EXPECT_EQ(out.function_name, "_Z5scalePKfPfi");
  ASSERT_GT(out.image.size(), 4u);
  EXPECT_EQ(out.image.substr(1, 3), "ELF");

  NvrtcOutput ptx = compile_nvrtc("scale.cu", kKernel, "scale",
                                  {{"SCALE", "4"}, {"R3_TUNABLE(...)", ""}}, {}, {}, 90, true);
  ASSERT_TRUE(ptx.ok) << ptx.log;
  EXPECT_NE(ptx.image.find(".entry _Z5scalePKfPfi"), std::string::npos);
  EXPECT_NE(ptx.image.find(".target sm_90"), std::string::npos);
}

// CUDA 13 keeps what cooperative_groups.h includes (libcu++) under include/cccl: a kernel that
// includes it compiles with no include path of the user's.
TEST(Nvrtc, CooperativeGroupsCompileWithTheToolkitsOwnIncludePath) {
  const char* text = R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void blocksum(const float* in, float* out) {
  cg::thread_block block = cg::this_thread_block();
  __shared__ float s[128];
  s[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  block.sync();
  if (threadIdx.x == 0) {
    float t = 0;
    for (int i = 0; i < 128; ++i) t += s[i];
    out[blockIdx.x] = t;
  }
}
)";
  NvrtcOutput out = compile_nvrtc("blocksum.cu", text, "blocksum", {}, {}, {}, 90);
  EXPECT_TRUE(out.ok) << out.log;
}

TEST(Nvrtc, ErrorsComeBackWithTheirLine) {
  NvrtcOutput out =
      compile_nvrtc("scale.cu", kKernel, "scale", {{"R3_TUNABLE(...)", ""}}, {}, {}, 90);
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.log.find("scale.cu(3)"), std::string::npos) << out.log;
  EXPECT_NE(out.log.find("SCALE must be defined"), std::string::npos) << out.log;

  NvrtcOutput wrong_entry = compile_nvrtc("scale.cu", kKernel, "no_such_kernel",
                                          {{"SCALE", "1"}, {"R3_TUNABLE(...)", ""}}, {}, {}, 90);
  EXPECT_FALSE(wrong_entry.ok);
  EXPECT_NE(wrong_entry.log.find("no_such_kernel"), std::string::npos) << wrong_entry.log;

  NvrtcOutput bad_option =
      compile_nvrtc("scale.cu", kKernel, "scale", {{"SCALE", "1"}, {"R3_TUNABLE(...)", ""}}, {},
                    split_flags({"--no-such-option"}), 90);
  EXPECT_FALSE(bad_option.ok);
  EXPECT_NE(bad_option.log.find("no-such-option"), std::string::npos) << bad_option.log;
}

TEST(Nvrtc, TheGpuComparisonKernelsCompileForEveryElementType) {
  NvrtcOutput ptx =
      compile_nvrtc("r3_compare.cu", compare_kernels_source(), "", {}, {}, {}, 90, true);
  ASSERT_TRUE(ptx.ok) << ptx.log;
  for (capture::ElementType type : capture::kAllElementTypes) {
    std::string entry = ".entry r3_compare_" + std::string(capture::to_string(type)) + "(";
    EXPECT_NE(ptx.image.find(entry), std::string::npos) << entry;
  }
}

#if R3_HAVE_LLVM
TEST(ClangNvptx, CompilesCudaToPtxWithLibdeviceAndAPassPipeline) {
  compiler::Source source;
  source.name = "scale.cu";
  source.text = kKernel;
  source.defines = {{"SCALE", "2"}, {"R3_TUNABLE(...)", ""}};
  compiler::CudaCompileResult out =
      compiler::compile_cuda_kernel(source, "scale", "default<O3>", "sm_90");
  ASSERT_TRUE(out.ok()) << out.diagnostics;
  EXPECT_EQ(out.function_name, "_Z5scalePKfPfi");
  EXPECT_NE(out.ptx.find(".entry _Z5scalePKfPfi"), std::string::npos);
  EXPECT_NE(out.ptx.find(".target sm_90"), std::string::npos);
  // sqrtf came from libdevice and was inlined: nothing is left to resolve.
  EXPECT_EQ(out.ptx.find("__nv_"), std::string::npos) << out.ptx;

  compiler::CudaCompileResult bad =
      compiler::compile_cuda_kernel(source, "scale", "function(no-such-pass)", "sm_90");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.failed_at, compiler::Stage::passes);
  EXPECT_NE(bad.diagnostics.find("no-such-pass"), std::string::npos) << bad.diagnostics;

  compiler::CudaCompileResult missing =
      compiler::compile_cuda_kernel(source, "no_such_kernel", "", "sm_90");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.diagnostics.find("kernels: scale(float const*, float*, int)"),
            std::string::npos)
      << missing.diagnostics;
}
#endif

TEST(CudaBackend, WithoutAGpuDriverTheBackendSaysWhy) {
  if (why_unavailable().empty()) GTEST_SKIP() << "this machine has a GPU";
  try {
    make_backend("cuda");
    FAIL() << "expected NotAvailableError";
  } catch (const NotAvailableError& e) {
    EXPECT_NE(std::string(e.what()).find("the CUDA backend cannot run here"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace r3::replay::cuda
