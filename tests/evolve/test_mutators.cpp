// The built-in mutators: each rewrite of the example kernels and the CUDA test kernels compiles
// with Clang at every value of its tunables (and with NVRTC where the CUDA toolkit is present),
// declares its tunables, leaves alone what it may not touch, and — run on the host — computes
// bit for bit what the original computes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>

#include "nvrtc_check.hpp"
#include "r3/compiler/host_compiler.hpp"
#include "r3/evolve/mutators.hpp"
#include "support/files.hpp"
#include "support/kernel_args.hpp"
#include "support/temp_dir.hpp"

namespace r3::evolve {
namespace {

using r3::test::read_text_file;

const std::vector<std::string> kAll = {"restrict", "unroll",      "launch_bounds",
                                       "ldg",      "hoist_loads", "parametrise"};

struct Kernel {
  std::string path, entry;
  SourceLanguage language;
};

std::vector<Kernel> kernels() {
  const std::string root = R3_TEST_SOURCE_DIR;
  std::vector<Kernel> out = {
      {root + "/examples/demo/stencil.cpp", "stencil2d", SourceLanguage::cpp},
      {root + "/examples/spmv/spmv.cpp", "spmv_csr", SourceLanguage::cpp},
      {root + "/examples/particles/particles.cpp", "push_particles", SourceLanguage::cpp}};
  for (const char* name :
       {"saxpy", "stencil2d", "spmv_csr", "matvec", "reduce_sum", "matmul_tiled"}) {
    out.push_back(
        {std::string(R3_TEST_DATA_DIR) + "/kernels/" + name + ".cu", name, SourceLanguage::cuda});
  }
  return out;
}

// Each value of each tunable, the others at their defaults, as "#define NAME VALUE" lines (the
// full cross product is bench/mutator_yield's job).
std::vector<std::string> assignments(const std::vector<Tunable>& tunables) {
  std::vector<std::string> all;
  for (const Tunable& varied : tunables) {
    for (const std::string& v : varied.values) {
      std::string defines;
      for (const Tunable& t : tunables) {
        defines += "#define " + t.name + " " + (t.name == varied.name ? v : t.default_value) + "\n";
      }
      all.push_back(defines);
    }
  }
  return all;
}

std::vector<Mutation> mutations_of(const std::string& source, const std::string& entry,
                                   SourceLanguage language,
                                   const std::vector<std::string>& which = kAll) {
  MutationReport report =
      mutate(source, "kernel" + std::string(language == SourceLanguage::cuda ? ".cu" : ".cpp"),
             entry, language, which);
  EXPECT_EQ(report.diagnostics, "");
  for (const Rejection& r : report.rejected) ADD_FAILURE() << r.mutation.mutator << ": " << r.error;
  return report.mutations;
}

std::optional<Mutation> find(const std::vector<Mutation>& mutations, const std::string& mutator) {
  for (const Mutation& m : mutations) {
    if (m.mutator == mutator) return m;
  }
  return std::nullopt;
}

TEST(Mutators, AreAvailableInThisBuild) { EXPECT_TRUE(mutators_available()); }

TEST(Mutators, EveryRewriteOfTheBundledKernelsCompilesAtEveryTunableValue) {
  std::map<std::string, int> produced;
  for (const Kernel& k : kernels()) {
    SCOPED_TRACE(k.path);
    const std::string source = read_text_file(k.path);
    MutationReport report = mutate(source, k.path, k.entry, k.language, kAll);
    EXPECT_EQ(report.diagnostics, "");
    EXPECT_TRUE(report.rejected.empty())
        << report.rejected.front().mutation.mutator << ": " << report.rejected.front().error;
    EXPECT_FALSE(report.mutations.empty());
    for (const Mutation& m : report.mutations) {
      SCOPED_TRACE(m.mutator + ": " + m.description);
      ++produced[m.mutator];
      EXPECT_NE(m.source, source);
      EXPECT_EQ(parse_tunables(m.source), m.tunables) << "the source does not declare its tunables";
      EXPECT_FALSE(m.tunables.empty());
      for (const std::string& defines : assignments(m.tunables)) {
        std::string diagnostics;
        EXPECT_TRUE(compiles(defines + m.source, k.path, k.language, diagnostics))
            << defines << diagnostics;
      }
    }
  }
  for (const std::string& mutator : kAll)
    EXPECT_GT(produced[mutator], 0) << mutator << " never applied";
}

TEST(Mutators, CudaRewritesCompileWithNvrtc) {
  if (!bench::nvrtc_available())
    GTEST_SKIP() << "this build has no CUDA toolkit: NVRTC check skipped";
  for (const Kernel& k : kernels()) {
    if (k.language != SourceLanguage::cuda) continue;
    SCOPED_TRACE(k.path);
    std::string log;
    ASSERT_TRUE(bench::nvrtc_compiles(read_text_file(k.path), k.path, {}, log)) << log;
    for (const Mutation& m : mutations_of(read_text_file(k.path), k.entry, k.language)) {
      SCOPED_TRACE(m.mutator + ": " + m.description);
      for (const std::string& defines : assignments(m.tunables)) {
        std::string compile_log;
        EXPECT_TRUE(bench::nvrtc_compiles(defines + m.source, k.path, {}, compile_log))
            << defines << compile_log;
      }
    }
  }
}

TEST(Mutators, NvrtcCheckCanFail) {
  if (!bench::nvrtc_available())
    GTEST_SKIP() << "this build has no CUDA toolkit: NVRTC check skipped";
  std::string log;
  EXPECT_FALSE(bench::nvrtc_compiles("__global__ void k(float* y) { y[0] = undeclared; }", "bad.cu",
                                     {}, log));
  EXPECT_NE(log.find("undeclared"), std::string::npos) << log;
}

TEST(Mutators, CompileCheckSeesTheCudaHeadersAndRejectsErrors) {
  const std::string good =
      "extern \"C\" __global__ void k(const float* x, float* sum, int n) {\n"
      "  float v = threadIdx.x < n ? expf(x[threadIdx.x]) : 0.0f;\n"
      "  for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);\n"
      "  if (threadIdx.x % 32 == 0) atomicAdd(sum, v);\n}\n";
  std::string diagnostics;
  EXPECT_TRUE(compiles(good, "good.cu", SourceLanguage::cuda, diagnostics)) << diagnostics;
  EXPECT_TRUE(compiles("#define R3_T 4\n" + good, "good.cu", SourceLanguage::cuda, diagnostics))
      << diagnostics;
  diagnostics.clear();
  EXPECT_FALSE(compiles("__global__ void k(float* y) { y[0] = __no_such_intrinsic(1); }", "bad.cu",
                        SourceLanguage::cuda, diagnostics));
  EXPECT_NE(diagnostics.find("bad.cu:1:"), std::string::npos) << diagnostics;
  EXPECT_NE(diagnostics.find("__no_such_intrinsic"), std::string::npos) << diagnostics;
  diagnostics.clear();
  EXPECT_FALSE(
      compiles("void k(int n) { return n; }", "bad.cpp", SourceLanguage::cpp, diagnostics));
  EXPECT_NE(diagnostics.find("bad.cpp:1:"), std::string::npos) << diagnostics;
}

TEST(Mutators, RestrictQualifiesEveryUnqualifiedPointerParameter) {
  const std::string source = read_text_file(std::string(R3_TEST_DATA_DIR) + "/kernels/saxpy.cu");
  std::optional<Mutation> m =
      find(mutations_of(source, "saxpy", SourceLanguage::cuda, {"restrict"}), "restrict");
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->source.find("const float* R3_RESTRICT x, float* R3_RESTRICT y"), std::string::npos)
      << m->source;
  EXPECT_NE(m->source.find("#define R3_RESTRICT __restrict__"), std::string::npos);
  EXPECT_EQ(m->tunables, (std::vector<Tunable>{{"R3_USE_RESTRICT", "1", {"0", "1"}}}));
  // Nothing left to qualify: no rewrite.
  EXPECT_EQ(find(mutations_of(m->source, "saxpy", SourceLanguage::cuda, {"restrict"}), "restrict"),
            std::nullopt);
  // C++: the spelling GCC and Clang both accept.
  const std::string cpp =
      read_text_file(std::string(R3_TEST_SOURCE_DIR) + "/examples/spmv/spmv.cpp");
  std::optional<Mutation> host =
      find(mutations_of(cpp, "spmv_csr", SourceLanguage::cpp, {"restrict"}), "restrict");
  ASSERT_TRUE(host.has_value());
  EXPECT_NE(host->source.find("#define R3_RESTRICT __restrict\n"), std::string::npos);
}

TEST(Mutators, UnrollGivesEachLoopItsOwnFactorAndSkipsPragmaLoops) {
  const std::string source =
      "void k(int n, float* y) {\n  for (int i = 0; i < n; ++i) y[i] = 0;\n#pragma unroll 2\n"
      "  for (int i = 0; i < n; ++i) y[i] += 1;\n  for (int i = 0; i < n; ++i)\n    for (int j = "
      "0; j < 4; ++j) y[i] *= 2;\n}\n";
  std::vector<Mutation> m = mutations_of(source, "k", SourceLanguage::cpp, {"unroll"});
  ASSERT_EQ(m.size(), 3u);  // the first loop, the outer and the inner loop of the last nest
  for (const Mutation& mutation : m) {
    EXPECT_EQ(mutation.tunables.size(), 1u);
    EXPECT_EQ(mutation.tunables[0].name, "R3_UNROLL_0");
    EXPECT_EQ(mutation.tunables[0].values, (std::vector<std::string>{"1", "2", "4", "8"}));
  }
  // A second unroll on a rewritten source gets a fresh name.
  std::vector<Mutation> again = mutations_of(m[0].source, "k", SourceLanguage::cpp, {"unroll"});
  ASSERT_FALSE(again.empty());
  EXPECT_EQ(again[0].tunables[0].name, "R3_UNROLL_1");
}

TEST(Mutators, LaunchBoundsOnlyOnCudaKernelsWithoutThem) {
  const std::string source = read_text_file(std::string(R3_TEST_DATA_DIR) + "/kernels/saxpy.cu");
  std::optional<Mutation> m =
      find(mutations_of(source, "saxpy", SourceLanguage::cuda, {"launch_bounds"}), "launch_bounds");
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(
      m->source.find("__global__ void __launch_bounds__(R3_MAX_THREADS, R3_MIN_BLOCKS) saxpy("),
      std::string::npos)
      << m->source;
  EXPECT_EQ(find(mutations_of(m->source, "saxpy", SourceLanguage::cuda, {"launch_bounds"}),
                 "launch_bounds"),
            std::nullopt);
  const std::string cpp =
      read_text_file(std::string(R3_TEST_SOURCE_DIR) + "/examples/spmv/spmv.cpp");
  EXPECT_TRUE(mutations_of(cpp, "spmv_csr", SourceLanguage::cpp, {"launch_bounds", "ldg"}).empty());
}

TEST(Mutators, LdgWrapsReadsOfConstParametersIncludingNestedOnes) {
  const std::string source = read_text_file(std::string(R3_TEST_DATA_DIR) + "/kernels/spmv_csr.cu");
  std::optional<Mutation> m =
      find(mutations_of(source, "spmv_csr", SourceLanguage::cuda, {"ldg"}), "ldg");
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->source.find("R3_LDG(x[R3_LDG(columns[k])])"), std::string::npos) << m->source;
  EXPECT_NE(m->source.find("R3_LDG(values[k])"), std::string::npos);
  EXPECT_EQ(m->source.find("R3_LDG(y"), std::string::npos) << "y is written, not read-only";
  EXPECT_EQ(m->description, "__ldg for 5 read(s) of const parameters");
}

TEST(Mutators, HoistsOnlyInvariantLoadsTheLoopAlwaysMakes) {
  // scale[row] is invariant and read every iteration; x[j] varies; w[0] is read only behind an
  // if; the loop in g writes memory through a pointer that may alias c.
  const std::string source =
      "void f(int n, int row, const float* a, const float* x, const float* scale, const float* w, "
      "float* y) {\n"
      "  float s = 0;\n"
      "  for (int j = 0; j < n; ++j) {\n    s += a[row * n + j] * x[j] * scale[row];\n    if (j == "
      "3) s += w[0];\n  }\n"
      "  y[row] = s;\n}\n"
      "void g(int n, const float* c, float* out) {\n  for (int i = 0; i < n; ++i) out[i] = "
      "c[0];\n}\n";
  std::vector<Mutation> f = mutations_of(source, "f", SourceLanguage::cpp, {"hoist_loads"});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].description, "load of scale[row] hoisted before the loop at line 3");
  EXPECT_NE(f[0].source.find(
                "const float r3_hoisted_0 = ((0) < n) ? (scale[row]) : static_cast<float>(0);"),
            std::string::npos)
      << f[0].source;
  EXPECT_TRUE(mutations_of(source, "g", SourceLanguage::cpp, {"hoist_loads"}).empty());
  // With c restrict-qualified the store cannot change it: hoisted.
  std::string restricted = source;
  restricted.replace(restricted.find("const float* c"), 14, "const float* __restrict c");
  EXPECT_EQ(mutations_of(restricted, "g", SourceLanguage::cpp, {"hoist_loads"}).size(), 1u);
}

// srad's shape: BLOCK_SIZE sizes the shared tile and the block (16 x 16); N is the problem size
// and RADIUS a size the kernel never uses.
const char* kTiled = R"(#include <cuda_runtime.h>
#define N 4096
#define RADIUS 8
  #define BLOCK_SIZE 16
#define SQUARE(x) ((x) * (x))
__global__ void smooth(const float* in, float* out, int cols) {
  __shared__ float tile[BLOCK_SIZE][BLOCK_SIZE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int index = cols * BLOCK_SIZE * blockIdx.y + BLOCK_SIZE * blockIdx.x + cols * ty + tx;
  tile[ty][tx] = in[index];
  __syncthreads();
  float v = tile[ty][tx];
  if (tx > 0) v += tile[ty][tx - 1];
  if (index < N * N) out[index] = SQUARE(v);
}
)";

TEST(Mutators, ParametriseExposesTheKernelsSizesAndCouplesTheBlockToThem) {
  MutationContext context;
  context.recorded_block = {16, 16, 1};
  MutationReport report =
      mutate(kTiled, "tiled.cu", "smooth", SourceLanguage::cuda, {"parametrise"}, context);
  ASSERT_EQ(report.diagnostics, "");
  ASSERT_TRUE(report.rejected.empty()) << report.rejected.front().error;
  // The grid covering the recorded threads, or the recorded grid (blocks that each do one item).
  ASSERT_EQ(report.mutations.size(), 2u);
  const Mutation& m = report.mutations.front();
  EXPECT_EQ(m.source.find("R3_LAUNCH_GRID(recorded)"), std::string::npos);
  EXPECT_NE(report.mutations[1].source.find("R3_LAUNCH_GRID(recorded)"), std::string::npos);
  EXPECT_EQ(report.mutations[1].tunables, m.tunables);
  // 64 x 64 threads would be too many for a block; 2 x 2 is still one.
  EXPECT_EQ(m.tunables, (std::vector<Tunable>{{"BLOCK_SIZE", "16", {"4", "8", "16", "32"}}}))
      << m.source;
  EXPECT_EQ(parse_tunables(m.source), m.tunables);
  EXPECT_NE(m.source.find("R3_LAUNCH_BLOCK(BLOCK_SIZE, BLOCK_SIZE, 1)"), std::string::npos)
      << m.source;
  EXPECT_NE(m.source.find("#ifndef BLOCK_SIZE\n  #define BLOCK_SIZE 16\n#endif"), std::string::npos)
      << "the definition stays where it was, guarded:\n" << m.source;
  EXPECT_NE(m.source.find("#define N 4096\n"), std::string::npos) << "the problem size is not a tile";
  for (const std::string& defines : assignments(m.tunables)) {
    std::string diagnostics;
    EXPECT_TRUE(compiles(defines + m.source, "tiled.cu", SourceLanguage::cuda, diagnostics))
        << defines << diagnostics;
  }
  // Without a recorded block the tile still sizes shared data: tunable, with no coupling.
  MutationReport unshaped = mutate(kTiled, "tiled.cu", "smooth", SourceLanguage::cuda,
                                   {"parametrise"}, MutationContext{});
  ASSERT_EQ(unshaped.mutations.size(), 1u);
  EXPECT_EQ(unshaped.mutations[0].tunables.at(0).values,
            (std::vector<std::string>{"8", "16", "32"}));
  EXPECT_EQ(unshaped.mutations[0].source.find("R3_LAUNCH_BLOCK(BLOCK"), std::string::npos);
  // A source whose sizes are tunable already gets nothing more.
  context.declared_tunables = {"BLOCK_SIZE"};
  EXPECT_TRUE(mutate(kTiled, "tiled.cu", "smooth", SourceLanguage::cuda, {"parametrise"}, context)
                  .mutations.empty());
}

// A tile size written as a number (`__shared__ float ta[16][16]`, `blockIdx.y * 16`, `n / 16`)
// becomes one tunable everywhere the kernel writes it, coupled to the 16 x 16 block.
TEST(Mutators, ParametriseMakesATileSizeWrittenAsANumberTunable) {
  const std::string path = std::string(R3_TEST_DATA_DIR) + "/kernels/matmul_tiled.cu";
  const std::string source = read_text_file(path);
  MutationContext context;
  context.recorded_block = {16, 16, 1};
  MutationReport report =
      mutate(source, path, "matmul_tiled", SourceLanguage::cuda, {"parametrise"}, context);
  ASSERT_EQ(report.diagnostics, "");
  ASSERT_TRUE(report.rejected.empty()) << report.rejected.front().error;
  ASSERT_EQ(report.mutations.size(), 2u);
  const Mutation& m = report.mutations.front();
  EXPECT_EQ(m.tunables, (std::vector<Tunable>{{"R3_TILE_0", "16", {"4", "8", "16", "32"}}}));
  EXPECT_EQ(parse_tunables(m.source), m.tunables);
  EXPECT_NE(m.source.find("R3_LAUNCH_BLOCK(R3_TILE_0, R3_TILE_0, 1)"), std::string::npos);
  const std::string kernel = m.source.substr(m.source.find("extern \"C\""));
  EXPECT_EQ(kernel.find("16"), std::string::npos) << "a 16 was left:\n" << kernel;
  EXPECT_NE(kernel.find("__shared__ float ta[R3_TILE_0][R3_TILE_0];"), std::string::npos) << kernel;
  EXPECT_NE(kernel.find("n / R3_TILE_0"), std::string::npos) << kernel;
  for (const std::string& defines : assignments(m.tunables)) {
    std::string diagnostics;
    EXPECT_TRUE(compiles(defines + m.source, path, SourceLanguage::cuda, diagnostics))
        << defines << diagnostics;
  }
}

// A 32 sizing shared data in a kernel that works a warp at a time is the warp's size (one sum
// per warp), not a tile: another value loses the GPU context at large blocks. The same kernel
// without warp-level code keeps its tile; a warpSize read is warp-level code too, and so are
// shuffles in a __device__ helper the kernel calls, plain or a template (whose calls Clang leaves
// unresolved).
TEST(Mutators, ParametriseLeavesTheWarpSizeOfAWarpReduction) {
  const std::string reduction =
      "HELPERS"
      "extern \"C\" __global__ void block_sum(const float* x, float* sum, int n) {\n"
      "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  float v = i < n ? x[i] : 0.0f;\n"
      "  __shared__ float warp_sums[32];\n"
      "  WARP_REDUCE\n"
      "  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;\n"
      "  __syncthreads();\n"
      "  if (threadIdx.x == 0) {\n"
      "    float s = 0.0f;\n"
      "    for (int w = 0; w < (blockDim.x + 31) / 32; ++w) s += warp_sums[w];\n"
      "    atomicAdd(sum, s);\n"
      "  }\n}\n";
  auto with = [&](const std::string& helpers, const std::string& warp_code) {
    std::string source = reduction;
    source.replace(source.find("HELPERS"), std::string("HELPERS").size(), helpers);
    source.replace(source.find("WARP_REDUCE"), std::string("WARP_REDUCE").size(), warp_code);
    return source;
  };
  MutationContext context;
  context.recorded_block = {256, 1, 1};
  auto tunables_of = [&](const std::string& source) {
    MutationReport report =
        mutate(source, "block_sum.cu", "block_sum", SourceLanguage::cuda, {"parametrise"}, context);
    EXPECT_EQ(report.diagnostics, "");
    std::vector<Tunable> tunables;
    for (const Mutation& m : report.mutations)
      tunables.insert(tunables.end(), m.tunables.begin(), m.tunables.end());
    return tunables;
  };
  const std::vector<Tunable> plain = tunables_of(with("", "v += 0.0f;"));
  EXPECT_EQ(plain, (std::vector<Tunable>{{"R3_TILE_0", "32", {"16", "32", "64"}}}))
      << "without warp-level code the 32 is taken for a tile";
  const std::string shuffle = "for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);";
  EXPECT_TRUE(tunables_of(with("", shuffle)).empty());
  EXPECT_TRUE(tunables_of(with("", "if (warpSize != 32) return;")).empty());
  EXPECT_TRUE(tunables_of(with("__device__ float warp_sum(float v) {\n  " + shuffle +
                                   "\n  return v;\n}\n",
                               "v = warp_sum(v);"))
                  .empty())
      << "shuffles in a helper";
  EXPECT_TRUE(tunables_of(with("template <typename T>\n__device__ T warp_sum(T v) {\n  " +
                                   shuffle + "\n  return v;\n}\n",
                               "v = warp_sum(v);"))
                  .empty())
      << "shuffles in a template helper";
}

// A template kernel's integer parameter, at the recorded instance's value: every use in the
// kernel becomes the tunable (the recorded instance still compiles; its parameter goes unused),
// coupled to the block where it equals it, and the unit compiles at every value, with NVRTC too
// for the recorded instance.
TEST(Mutators, ParametriseMakesATemplateKernelsIntegerParametersTunable) {
  const std::string source = R"(#include <cuda_runtime.h>
namespace blas {
template <typename T, int BLOCK, bool CHECKED>
__global__ void block_sum(const T* in, T* out, int n) {
  __shared__ T part[BLOCK];
  int i = blockIdx.x * BLOCK + threadIdx.x;
  part[threadIdx.x] = (!CHECKED || i < n) ? in[i] : T(0);
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}
}  // namespace blas
)";
  MutationContext context;
  context.recorded_block = {128, 1, 1};
  context.template_arguments = {"float", "128", "true"};  // blas::block_sum<float, 128, true>
  MutationReport report =
      mutate(source, "sum.cu", "block_sum", SourceLanguage::cuda, {"parametrise"}, context);
  ASSERT_EQ(report.diagnostics, "");
  ASSERT_TRUE(report.rejected.empty()) << report.rejected.front().error;
  ASSERT_EQ(report.mutations.size(), 2u);
  const Mutation& m = report.mutations.front();
  ASSERT_EQ(m.tunables.size(), 1u);
  EXPECT_EQ(m.tunables[0].name, "R3_BLOCK_0");
  EXPECT_EQ(m.tunables[0].default_value, "128");
  EXPECT_NE(m.description.find("template parameter BLOCK as R3_BLOCK_0"), std::string::npos)
      << m.description;
  EXPECT_NE(m.source.find("R3_LAUNCH_BLOCK(R3_BLOCK_0, 1, 1)"), std::string::npos) << m.source;
  const std::string body = m.source.substr(m.source.find("__global__"));
  EXPECT_NE(body.find("__shared__ T part[R3_BLOCK_0];"), std::string::npos) << body;
  EXPECT_NE(body.find("blockIdx.x * R3_BLOCK_0"), std::string::npos) << body;
  EXPECT_NE(body.find("int stride = R3_BLOCK_0 / 2"), std::string::npos) << body;
  EXPECT_NE(m.source.find("template <typename T, int BLOCK, bool CHECKED>"), std::string::npos)
      << "the template's own declaration stays";
  const std::string instance =
      "\ntemplate __global__ void blas::block_sum<float, 128, true>(const float*, float*, int);\n";
  for (const std::string& defines : assignments(m.tunables)) {
    std::string diagnostics;
    EXPECT_TRUE(compiles(defines + m.source + instance, "sum.cu", SourceLanguage::cuda, diagnostics))
        << defines << diagnostics;
    if (!bench::nvrtc_available()) continue;
    std::string log, for_nvrtc = m.source;  // NVRTC has the CUDA built-ins without the header
    for_nvrtc.erase(for_nvrtc.find("#include <cuda_runtime.h>"), 25);
    EXPECT_TRUE(bench::nvrtc_compiles(defines + for_nvrtc + instance, "sum.cu", {}, log)) << log;
  }
  // Without the recorded instance's arguments there is no default: nothing is made tunable.
  context.template_arguments.clear();
  EXPECT_TRUE(
      mutate(source, "sum.cu", "block_sum", SourceLanguage::cuda, {"parametrise"}, context)
          .mutations.empty());
}

// A loop that steps by the recorded block's size written as a number walks its data a block at a
// time: the step becomes a size coupled to the block. Where a macro of that size already shapes
// the launch, the step takes the macro's name. Other steps stay as they are.
TEST(Mutators, ParametriseCouplesALoopStepOfTheBlocksSizeToTheBlock) {
  const std::string literal = R"(__global__ void scale_rows(const float* in, float* out, int cols, float a) {
  const float* row = in + (long)blockIdx.x * cols;
  for (int j = threadIdx.x; j < cols; j += 128) out[(long)blockIdx.x * cols + j] = a * row[j];
  for (int k = 0; k < 8; k += 4) out[k] += 0.0f;
  for (int j = threadIdx.x; j < cols; j = j + 128) out[j] *= 2.0f;
}
)";
  MutationContext context;
  context.recorded_block = {128, 1, 1};
  MutationReport report =
      mutate(literal, "rows.cu", "scale_rows", SourceLanguage::cuda, {"parametrise"}, context);
  ASSERT_EQ(report.diagnostics, "");
  ASSERT_TRUE(report.rejected.empty()) << report.rejected.front().error;
  ASSERT_EQ(report.mutations.size(), 2u);
  const Mutation& m = report.mutations.front();
  EXPECT_EQ(m.tunables,
            (std::vector<Tunable>{{"R3_STRIDE_0", "128", {"32", "64", "128", "256", "512"}}}));
  EXPECT_EQ(parse_tunables(m.source), m.tunables);
  EXPECT_NE(m.description.find("the loop step 128 as R3_STRIDE_0"), std::string::npos)
      << m.description;
  EXPECT_NE(m.source.find("R3_LAUNCH_BLOCK(R3_STRIDE_0, 1, 1)"), std::string::npos) << m.source;
  EXPECT_NE(m.source.find("j < cols; j += R3_STRIDE_0)"), std::string::npos) << m.source;
  EXPECT_NE(m.source.find("j = j + R3_STRIDE_0)"), std::string::npos) << m.source;
  EXPECT_NE(m.source.find("k += 4)"), std::string::npos) << "a step of another size stays";
  for (const std::string& defines : assignments(m.tunables)) {
    std::string diagnostics;
    EXPECT_TRUE(compiles(defines + m.source, "rows.cu", SourceLanguage::cuda, diagnostics))
        << defines << diagnostics;
  }
  // Recorded with another block, the step is not the block's: nothing to couple.
  context.recorded_block = {64, 1, 1};
  EXPECT_TRUE(mutate(literal, "rows.cu", "scale_rows", SourceLanguage::cuda, {"parametrise"}, context)
                  .mutations.empty());

  const std::string with_macro = R"(#define THREADS 128
__global__ void scale_rows(const float* in, float* out, int cols, float a) {
  __shared__ float factor[THREADS];
  factor[threadIdx.x] = a;
  __syncthreads();
  for (int j = threadIdx.x; j < cols; j += 128) out[(long)blockIdx.x * cols + j] = factor[threadIdx.x] * in[j];
}
)";
  context.recorded_block = {128, 1, 1};
  report = mutate(with_macro, "rows.cu", "scale_rows", SourceLanguage::cuda, {"parametrise"}, context);
  ASSERT_EQ(report.diagnostics, "");
  ASSERT_EQ(report.mutations.size(), 2u);
  const Mutation& follows = report.mutations.front();
  ASSERT_EQ(follows.tunables.size(), 1u) << follows.source;
  EXPECT_EQ(follows.tunables[0].name, "THREADS");
  EXPECT_NE(follows.source.find("j += THREADS)"), std::string::npos) << follows.source;
  EXPECT_NE(follows.description.find("the loop step 128 as THREADS"), std::string::npos)
      << follows.description;
  for (const std::string& defines : assignments(follows.tunables)) {
    std::string diagnostics;
    EXPECT_TRUE(compiles(defines + follows.source, "rows.cu", SourceLanguage::cuda, diagnostics))
        << defines << diagnostics;
  }
}

// An unroll factor the kernel states as a number is a compile-time constant too.
TEST(Mutators, ParametriseMakesAStatedUnrollFactorTunable) {
  const std::string source = R"(__global__ void sum4(const float* in, float* out, int n) {
  float acc = 0;
#pragma unroll 4
  for (int k = 0; k < n; ++k) acc += in[k];
#pragma unroll
  for (int k = 0; k < 8; ++k) acc *= 0.5f;
  out[threadIdx.x] = acc;
}
)";
  MutationReport report = mutate(source, "sum4.cu", "sum4", SourceLanguage::cuda, {"parametrise"});
  ASSERT_EQ(report.diagnostics, "");
  ASSERT_TRUE(report.rejected.empty()) << report.rejected.front().error;
  ASSERT_EQ(report.mutations.size(), 1u);
  const Mutation& m = report.mutations.front();
  EXPECT_EQ(m.tunables, (std::vector<Tunable>{{"R3_UNROLL_0", "4", {"1", "2", "4", "8", "16"}}}));
  EXPECT_EQ(parse_tunables(m.source), m.tunables);
  EXPECT_NE(m.source.find("#pragma unroll R3_UNROLL_0\n  for (int k = 0; k < n"), std::string::npos)
      << m.source;
  EXPECT_NE(m.source.find("#pragma unroll\n  for (int k = 0; k < 8"), std::string::npos)
      << "a pragma without a factor is left as it is";
  for (const std::string& defines : assignments(m.tunables)) {
    std::string diagnostics;
    EXPECT_TRUE(compiles(defines + m.source, "sum4.cu", SourceLanguage::cuda, diagnostics))
        << defines << diagnostics;
  }
}

TEST(Mutators, ReportsSourcesThatDoNotParseAndUnknownKernels) {
  MutationReport broken =
      mutate("void k(int n) { n = ; }", "broken.cpp", "k", SourceLanguage::cpp, kAll);
  EXPECT_TRUE(broken.mutations.empty());
  EXPECT_NE(broken.diagnostics.find("broken.cpp:1:"), std::string::npos) << broken.diagnostics;
  MutationReport missing =
      mutate("void k(int* y) { y[0] = 1; }", "k.cpp", "other", SourceLanguage::cpp, kAll);
  EXPECT_TRUE(missing.mutations.empty());
  EXPECT_NE(missing.diagnostics.find("no definition of 'other'"), std::string::npos)
      << missing.diagnostics;
}

// A kernel whose build gives it an include directory and a macro: the mutators read it with
// them (MutationContext), as the candidates are compiled, and every rewrite compiles with them.
// Without them the kernel does not parse and gets no rewrites, which is what a tune.yaml's
// include_dirs and defines once got.
TEST(Mutators, ReadTheSourceWithTheBuildsIncludeDirectoriesDefinesAndFlags) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "src");
  std::filesystem::create_directories(dir / "include");
  std::ofstream(dir / "include" / "coefficients.h") << "#define CENTRE_WEIGHT 4.0f\n";
  const std::string source =
      "#include \"coefficients.h\"\n"
      "extern \"C\" void smooth(const float* in, float* out, int n) {\n"
      "  for (int i = 1; i < n - 1; ++i)\n"
      "    out[i] = SCALE * (in[i - 1] + in[i + 1] + CENTRE_WEIGHT * in[i]) * OFFSET_SIGN;\n"
      "}\n";
  const std::string path = (dir / "src" / "smooth.cpp").string();
  MutationReport unread = mutate(source, path, "smooth", SourceLanguage::cpp, kAll);
  EXPECT_NE(unread.diagnostics.find("'coefficients.h' file not found"), std::string::npos)
      << unread.diagnostics;
  EXPECT_TRUE(unread.mutations.empty());

  MutationContext context;
  context.include_dirs = {dir / "include"};
  context.defines = {{"SCALE", "0.125f"}};
  // A reading flag, as a kernel's flags list may hold it among code generation flags that the
  // search leaves out (reading_flags in the tuning job).
  context.flags = {"-DOFFSET_SIGN=1"};
  MutationReport read = mutate(source, path, "smooth", SourceLanguage::cpp, kAll, context);
  EXPECT_EQ(read.diagnostics, "");
  EXPECT_TRUE(read.rejected.empty())
      << read.rejected.front().mutation.mutator << ": " << read.rejected.front().error;
  ASSERT_TRUE(find(read.mutations, "restrict")) << "restrict on the two pointers";
  ASSERT_TRUE(find(read.mutations, "unroll")) << "unroll on the loop";
  for (const Mutation& m : read.mutations) {
    SCOPED_TRACE(m.mutator + ": " + m.description);
    std::string diagnostics;
    EXPECT_TRUE(compiles(m.source, path, SourceLanguage::cpp, diagnostics, context)) << diagnostics;
    diagnostics.clear();
    EXPECT_FALSE(compiles(m.source, path, SourceLanguage::cpp, diagnostics))
        << "the rewrite still needs the build's include directory and macros";
  }
}

// --- the rewrites compute what the originals compute (host JIT, bit for bit) -------------------

compiler::HostCompileResult compile(const std::string& text, const std::string& entry,
                                    const std::string& defines = "") {
  compiler::Source s;
  s.name = "kernel.cpp";
  s.text = defines + text;
  return compiler::compile_host_kernel(s, entry, "default<O2>");
}

TEST(Mutators, HostRewritesComputeTheSameResults) {
  std::mt19937 rng(11);
  // spmv_csr on a random 200-row matrix, including empty rows.
  const int rows = 200;
  std::vector<int> offsets = {0}, columns;
  std::vector<double> values, x(rows);
  for (int r = 0; r < rows; ++r) {
    const int count = static_cast<int>(rng() % 7);
    for (int k = 0; k < count; ++k) {
      columns.push_back(static_cast<int>(rng() % rows));
      values.push_back(std::uniform_real_distribution<double>(-1, 1)(rng));
    }
    offsets.push_back(static_cast<int>(columns.size()));
  }
  for (double& v : x) v = std::uniform_real_distribution<double>(-1, 1)(rng);
  auto spmv = [&](const compiler::HostCompileResult& compiled) {
    std::vector<double> y(rows, -7.0);
    test::KernelArgs()
        .add(rows)
        .add(offsets.data())
        .add(columns.data())
        .add(values.data())
        .add(x.data())
        .add(y.data())
        .call(compiled);
    return y;
  };
  // stencil2d on a random 37 x 37 grid.
  const int n = 37;
  std::vector<float> in(n * n);
  for (float& v : in) v = std::uniform_real_distribution<float>(0, 1)(rng);
  auto stencil = [&](const compiler::HostCompileResult& compiled) {
    std::vector<float> out(in);
    double change = 0;
    test::KernelArgs().add(in.data()).add(out.data()).add(n).add(0.2f).add(&change).call(compiled);
    out.push_back(static_cast<float>(change));
    return out;
  };

  int checked = 0;
  const std::string root = R3_TEST_SOURCE_DIR;
  for (const auto& [path, entry] :
       {std::pair{root + "/examples/spmv/spmv.cpp", std::string("spmv_csr")},
        std::pair{root + "/examples/demo/stencil.cpp", std::string("stencil2d")}}) {
    const std::string source = read_text_file(path);
    const bool is_spmv = entry == "spmv_csr";
    auto run = [&](const compiler::HostCompileResult& c) {
      return is_spmv ? std::vector<double>(spmv(c)) : [&] {
        std::vector<float> f = stencil(c);
        return std::vector<double>(f.begin(), f.end());
      }();
    };
    const std::vector<double> expected = run(compile(source, entry));
    for (const Mutation& m : mutations_of(source, entry, SourceLanguage::cpp)) {
      for (const std::string& defines : assignments(m.tunables)) {
        SCOPED_TRACE(path + ": " + m.description + "\n" + defines);
        compiler::HostCompileResult compiled = compile(m.source, entry, defines);
        ASSERT_TRUE(compiled.ok()) << compiled.diagnostics;
        EXPECT_EQ(run(compiled), expected);
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 10);
}

}  // namespace
}  // namespace r3::evolve
