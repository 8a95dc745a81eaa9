// The parts of the CUDA backend that need no GPU: what variant flags mean, NVRTC compiles (to
// cubins and PTX), the GPU comparison kernels, the Clang/NVPTX path, and the clear refusal of a
// machine without a GPU driver.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>

#include "driver.hpp"
#include "gpu_compare.hpp"
#include "compile_worker.hpp"
#include "nvrtc_compiler.hpp"
#include "translate.hpp"
#include "r3/config.hpp"
#include "r3/error.hpp"
#include "r3/replay/backend.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"
#if R3_HAVE_LLVM
#include "r3/compiler/cuda_compiler.hpp"
#include "r3/compiler/extract.hpp"
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

// Compiles ahead run in worker processes (NVRTC serialises the compiles of one process): a
// worker gives exactly what the backend makes in process, a compile error comes back as a
// result, and a worker killed in between is replaced without failing the next variant.
TEST(CompileWorker, TranslatesAsTheBackendDoesInProcessAndSurvivesItsDeath) {
  KernelFacts facts;
  facts.kernel_name = "scale";
  facts.compute_capability = 90;
  facts.architecture = "sm_90";
  Variant variant;
  variant.source_name = "scale.cu";
  variant.source_text = kKernel;
  variant.compiler = replay::Compiler::nvrtc;
  variant.defines = {{"SCALE", "4"}, {"R3_TUNABLE(...)", ""}};
  ASSERT_TRUE(from_source(facts, variant));
  const Translation here = translate_source(facts, variant, split_flags(variant.flags));
  ASSERT_TRUE(here.ok) << here.diagnostics;

  CompileWorker worker(R3_TEST_SANDBOX);
  const Translation there = worker.translate("cuda", encode(facts), variant);
  ASSERT_TRUE(there.ok) << there.diagnostics;
  EXPECT_EQ(there.bytes, here.bytes);
  EXPECT_EQ(there.function, here.function);
  EXPECT_FALSE(there.ptx);

  Variant broken = variant;
  broken.defines.erase("SCALE");  // #error SCALE must be defined
  const Translation error = worker.translate("cuda", encode(facts), broken);
  EXPECT_FALSE(error.ok);
  EXPECT_NE(error.diagnostics.find("SCALE must be defined"), std::string::npos) << error.diagnostics;

  // Kill the worker between two variants; the next translation starts a new one.
  ASSERT_GT(worker.pid(), 0);
  ASSERT_EQ(::kill(worker.pid(), SIGKILL), 0);
  const Translation after = worker.translate("cuda", encode(facts), variant);
  if (!after.ok) {
    EXPECT_NE(after.diagnostics.find("the compile worker died"), std::string::npos)
        << after.diagnostics;
    const Translation again = worker.translate("cuda", encode(facts), variant);
    EXPECT_TRUE(again.ok) << again.diagnostics;
  }
  EXPECT_THROW(translate("opencl", "{}", variant), Error);
}

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

// r3-mpi names a source's program by its absolute path (KernelTarget::source_path): NVRTC then
// reads its quoted includes beside the file, as the application's build did. Named by the file
// alone, the program reads them in the working directory, which holds a helper of its own here.
TEST(Nvrtc, AProgramNamedByItsPathReadsQuotedIncludesBesideItNotInTheWorkingDirectory) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "src");
  std::filesystem::create_directories(dir / "cwd");
  std::ofstream(dir / "src" / "helper.cuh") << "#define SCALE 3\n";
  std::ofstream(dir / "cwd" / "helper.cuh") << "#error the working directory's helper was read\n";
  const std::string text = std::string("#include \"helper.cuh\"\n") + kKernel;
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(dir / "cwd");
  struct Back {
    std::filesystem::path to;
    ~Back() { std::filesystem::current_path(to); }
  } back{before};
  NvrtcOutput by_path = compile_nvrtc((dir / "src" / "k.cu").string(), text, "scale",
                                      {{"R3_TUNABLE(...)", ""}}, {}, {}, 90);
  EXPECT_TRUE(by_path.ok) << by_path.log;
  NvrtcOutput by_name = compile_nvrtc("k.cu", text, "scale", {{"R3_TUNABLE(...)", ""}}, {}, {}, 90);
  EXPECT_FALSE(by_name.ok) << "NVRTC did not read the working directory: the test proves nothing";
  EXPECT_NE(by_name.log.find("working directory's helper"), std::string::npos) << by_name.log;
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

#if R3_HAVE_LLVM
// r3 extract on a whole application file (tests/data/extract/app.cu: system headers, a helper
// header, host code with <<<>>> launches): each kernel's unit holds what it uses and nothing of
// the host code, and NVRTC, which cannot compile the file, compiles the unit.
TEST(Extract, AKernelsUnitFromAWholeApplicationFileCompilesWithNvrtc) {
  const std::string file = std::string(R3_TEST_DATA_DIR) + "/extract/app.cu";
  auto extract = [&](const std::string& kernel) {
    compiler::ExtractOptions options;
    options.file = file;
    options.kernel = kernel;
    return compiler::extract_kernel(options);
  };
  NvrtcOutput whole = compile_nvrtc("app.cu", test::read_text_file(file), "pairs", {}, {}, {}, 90);
  EXPECT_FALSE(whole.ok) << "NVRTC compiled the whole application file; the test proves nothing";

  compiler::ExtractedUnit pairs = extract("pairs");
  ASSERT_TRUE(pairs.ok) << pairs.diagnostics;
  EXPECT_EQ(pairs.kernel, "pairs");
  for (const char* needed : {"#include <cooperative_groups.h>", "#define BLOCK 128",
                             "namespace cg = cooperative_groups;", "float smooth(float a"})
    EXPECT_NE(pairs.text.find(needed), std::string::npos) << needed << " missing:\n" << pairs.text;
  for (const char* host : {"int main", "printf", "stdio.h", "print_banner", "UNUSED_BY_KERNELS",
                           "weights", "app::scale"})
    EXPECT_EQ(pairs.text.find(host), std::string::npos) << host << " copied:\n" << pairs.text;
  NvrtcOutput unit = compile_nvrtc("app.cu", pairs.text, "pairs", {}, {}, {}, 90);
  EXPECT_TRUE(unit.ok) << unit.log << "\n" << pairs.text;
  EXPECT_EQ(unit.function_name, "_Z5pairsPKfPfi");
  ASSERT_FALSE(pairs.pieces.empty());
  EXPECT_EQ(pairs.pieces.back().first_line, 33u) << "the kernel's line in app.cu";

  // The template kernel in its namespace, by its instance: its struct, constant, helpers and
  // macros (one that uses another) come along; the recorded instance compiles.
  compiler::ExtractedUnit scale = extract("app::scale<4>");
  ASSERT_TRUE(scale.ok) << scale.diagnostics;
  EXPECT_TRUE(scale.is_template);
  EXPECT_EQ(scale.kernel, "app::scale");
  for (const char* needed : {"struct Params", "__constant__ float weights[3];", "float blend(",
                             "#define SQUARE(x)", "#define SCALE_OF(p)", "namespace app {"})
    EXPECT_NE(scale.text.find(needed), std::string::npos) << needed << " missing:\n" << scale.text;
  NvrtcOutput instance = compile_nvrtc("app.cu", scale.text, "app::scale<4>", {}, {}, {}, 90);
  EXPECT_TRUE(instance.ok) << instance.log << "\n" << scale.text;
  EXPECT_EQ(extract("scale").kernel, "app::scale") << "found by its unqualified name";

  compiler::ExtractedUnit missing = extract("no_such_kernel");
  EXPECT_FALSE(missing.ok);
  EXPECT_NE(missing.diagnostics.find("its kernels: app::scale, pairs"), std::string::npos)
      << missing.diagnostics;
}

// The recorder knows a struct's name but not its layout: the source says which parameters point
// to structs of one floating type, so that their regions get that type's tolerance.
TEST(Extract, PointersToStructsOfOneFloatingTypeAreTyped) {
  test::TempDir dir;
  const std::filesystem::path file = dir.path() / "particles.cu";
  test::write_text_file(file, R"(#include <cstdio>
struct Particle { float x, y, z; float v[3]; };
struct Mixed { float a; int b; };
struct Base { double m; };
struct Body : Base { double p[2]; };
union Either { float f; double d; };
typedef Particle ParticleAlias;
__global__ void step(ParticleAlias* p, Mixed* m, const Body* b, float* f, Either* e, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { p[i].x += p[i].v[0] + m[i].a + b[i].p[0] + e[i].f; f[i] = 0; }
}
int main() { step<<<1, 1>>>(nullptr, nullptr, nullptr, nullptr, nullptr, 0); }
)");
  compiler::ExtractOptions options;
  options.file = file;
  options.kernel = "step";
  compiler::ExtractedUnit unit = compiler::extract_kernel(options);
  ASSERT_TRUE(unit.ok) << unit.diagnostics;
  EXPECT_EQ(unit.parameter_struct_types,
            (std::vector<std::string>{"f32", "", "f64", "", "", ""}));
  EXPECT_EQ(unit.parameter_names, (std::vector<std::string>{"p", "m", "b", "f", "e", "n"}));
}

TEST(Extract, CompileFlagsComeFromACompileCommandsDatabase) {
  test::TempDir dir;
  std::ofstream(dir / "compile_commands.json") << R"([
  {"directory": ")" << dir.path().string() << R"(", "file": "src/app.cu",
   "command": "nvcc -O3 -arch=sm_90 -Iinclude -isystem /opt/x -DN=4 -DFAST --std=c++17 -Xcompiler -fopenmp -rdc=true -c src/app.cu -o app.o"}
])";
  compiler::CompileFlags flags =
      compiler::flags_from_compile_commands(dir.path(), dir / "src" / "app.cu");
  EXPECT_EQ(flags.include_dirs,
            (std::vector<std::filesystem::path>{dir / "include", "/opt/x"}));
  EXPECT_EQ(flags.defines, (std::map<std::string, std::string>{{"N", "4"}, {"FAST", "1"}}));
  EXPECT_EQ(flags.flags, std::vector<std::string>{"-std=c++17"});
  std::string notes;
  for (const auto& n : flags.notes) notes += n + "; ";
  EXPECT_NE(notes.find("-Xcompiler -fopenmp"), std::string::npos) << notes;
  EXPECT_NE(notes.find("-rdc=true"), std::string::npos) << notes;
  EXPECT_THROW(compiler::flags_from_compile_commands(dir.path(), dir / "other.cu"), Error);
}
#endif

}  // namespace
}  // namespace r3::replay::cuda
