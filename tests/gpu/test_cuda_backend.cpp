// The CUDA replay backend on a GPU: launches recorded here (support/cuda_capture.hpp) replayed
// as recorded code and as variants from NVRTC and Clang/NVPTX, verified and timed; wrong
// results, impossible shapes and crashing variants as results, with the next candidate running;
// relocation when the recorded addresses are taken. Skipped where there is no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "cuda_capture.hpp"
#include "driver.hpp"
#include "gpu_compare.hpp"
#include "r3/config.hpp"
#include "r3/replay/backend.hpp"
#include "r3/replay/replay_command.hpp"
#include "r3/replay/sandbox.hpp"
#include "require_gpu.hpp"
#include "support/files.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace r3::replay {
namespace {

using test::contains;

#define R3_REQUIRE_GPU() R3_REQUIRE_GPU_FOR("the CUDA backend")

constexpr int kN = 256;

const char* kStencil = R"(
__global__ void stencil2d(const float* in, float* out, int n, float alpha) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= n - 1 || y >= n - 1) return;
  int i = y * n + x;
  out[i] = in[i] + alpha * (in[i - n] + in[i + n] + in[i - 1] + in[i + 1] - 4.0f * in[i]);
}
)";

// The same kernel with one change spliced in before the store.
std::string stencil_variant(const std::string& change, const std::string& store = "out[i]") {
  return std::string(R"(
__global__ void stencil2d(const float* in, float* out, int n, float alpha) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= n - 1 || y >= n - 1) return;
  int i = y * n + x;
  float v = in[i] + alpha * (in[i - n] + in[i + n] + in[i - 1] + in[i + 1] - 4.0f * in[i]);
  )") + change +
         "\n  " + store + " = v;\n}\n";
}

test::CudaLaunchSpec stencil_spec() {
  test::CudaLaunchSpec spec;
  spec.source = kStencil;
  spec.entry = "stencil2d";
  spec.grid = {kN / 16, kN / 16, 1};
  spec.block = {16, 16, 1};
  std::vector<float> in(kN * kN), out(kN * kN, 0.0f);
  for (int i = 0; i < kN * kN; ++i) in[i] = std::sin(0.01f * i);
  spec.buffers.push_back({"in", test::bytes_of(in), capture::ElementType::f32, {}});
  spec.buffers.push_back({"out", test::bytes_of(out), capture::ElementType::f32, {}});
  spec.args = {test::pointer_arg(0), test::pointer_arg(1), test::value_arg(kN, "int"),
               test::value_arg(0.1f, "float")};
  spec.launches = 2;
  return spec;
}

// A struct of device pointers passed by value, and a table of pointers in device memory.
const char* kGather = R"(
struct Views { const float* a; float* out; int n; };
extern "C" __global__ void gather(Views v, const float* const* table, int count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= v.n) return;
  float s = v.a[i];
  for (int k = 0; k < count; ++k) s += table[k][i];
  v.out[i] = s;
}
)";

test::CudaLaunchSpec gather_spec() {
  test::CudaLaunchSpec spec;
  spec.source = kGather;
  spec.entry = "gather";
  const int n = 4096;
  spec.grid = {n / 128, 1, 1};
  spec.block = {128, 1, 1};
  std::vector<float> a(n), b0(n), b1(n), out(n, 0.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = float(i);
    b0[i] = 0.5f * i;
    b1[i] = -0.25f * i;
  }
  spec.buffers.push_back({"a", test::bytes_of(a), capture::ElementType::f32, {}});
  spec.buffers.push_back({"out", test::bytes_of(out), capture::ElementType::f32, {}});
  spec.buffers.push_back({"b0", test::bytes_of(b0), capture::ElementType::f32, {}});
  spec.buffers.push_back({"b1", test::bytes_of(b1), capture::ElementType::f32, {}});
  spec.buffers.push_back(
      {"table", std::vector<std::byte>(16), capture::ElementType::u64, {{0, 2}, {8, 3}}});
  struct Views {
    const float* a;
    float* out;
    int n;
  } views{nullptr, nullptr, n};
  test::CudaArg views_arg = test::value_arg(views, "Views");
  views_arg.pointers = {{0, 0}, {8, 1}};
  spec.args = {views_arg, test::pointer_arg(4), test::value_arg(2, "int")};
  return spec;
}

const char* kSaxpy = R"(
__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

test::CudaLaunchSpec saxpy_spec(int n = 1 << 16) {
  test::CudaLaunchSpec spec;
  spec.source = kSaxpy;
  spec.entry = "saxpy";
  spec.grid = {static_cast<std::uint32_t>(n / 256), 1, 1};
  spec.block = {256, 1, 1};
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = 0.5f * i, y[i] = 1.0f - i;
  spec.buffers.push_back({"x", test::bytes_of(x), capture::ElementType::f32, {}});
  spec.buffers.push_back({"y", test::bytes_of(y), capture::ElementType::f32, {}});
  spec.args = {test::value_arg(n, "int"), test::value_arg(2.0f, "float"), test::pointer_arg(0),
               test::pointer_arg(1)};
  return spec;
}

const char* kSpmv = R"(
__global__ void spmv_csr(int rows, const int* row_ptr, const int* cols, const float* vals,
                         const float* x, float* y) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float sum = 0.0f;
  for (int k = row_ptr[r]; k < row_ptr[r + 1]; ++k) sum += vals[k] * x[cols[k]];
  y[r] = sum;
}
)";

// A banded matrix with 3 to 5 entries per row.
test::CudaLaunchSpec spmv_spec() {
  test::CudaLaunchSpec spec;
  spec.source = kSpmv;
  spec.entry = "spmv_csr";
  const int rows = 8192;
  std::vector<int> row_ptr{0}, cols;
  std::vector<float> vals, x(rows), y(rows, 0.0f);
  for (int r = 0; r < rows; ++r) {
    for (int c = r - 2; c <= r + 2; ++c) {
      if (c < 0 || c >= rows || (c - r) % 2 == 1) continue;
      cols.push_back(c);
      vals.push_back(1.0f / (1 + std::abs(c - r)));
    }
    row_ptr.push_back(static_cast<int>(cols.size()));
    x[r] = std::cos(0.1f * r);
  }
  spec.grid = {rows / 128, 1, 1};
  spec.block = {128, 1, 1};
  spec.buffers.push_back({"row_ptr", test::bytes_of(row_ptr), capture::ElementType::i32, {}});
  spec.buffers.push_back({"cols", test::bytes_of(cols), capture::ElementType::i32, {}});
  spec.buffers.push_back({"vals", test::bytes_of(vals), capture::ElementType::f32, {}});
  spec.buffers.push_back({"x", test::bytes_of(x), capture::ElementType::f32, {}});
  spec.buffers.push_back({"y", test::bytes_of(y), capture::ElementType::f32, {}});
  spec.args = {test::value_arg(rows, "int"), test::pointer_arg(0), test::pointer_arg(1),
               test::pointer_arg(2),         test::pointer_arg(3), test::pointer_arg(4)};
  return spec;
}

// Float atomics: the order of the additions, so the last bits of the sum, differ from run to
// run; the f32 tolerance accepts that.
const char* kReduction = R"(
__global__ void sum_squares(const float* in, float* sum, int n) {
  __shared__ float partial[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < n ? in[i] * in[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, partial[0]);
}
)";

test::CudaLaunchSpec reduction_spec() {
  test::CudaLaunchSpec spec;
  spec.source = kReduction;
  spec.entry = "sum_squares";
  const int n = 1 << 18;
  spec.grid = {n / 256, 1, 1};
  spec.block = {256, 1, 1};
  std::vector<float> in(n), sum(1, 0.0f);
  for (int i = 0; i < n; ++i) in[i] = std::sin(0.001f * i);
  spec.buffers.push_back({"in", test::bytes_of(in), capture::ElementType::f32, {}});
  spec.buffers.push_back({"sum", test::bytes_of(sum), capture::ElementType::f32, {}});
  spec.args = {test::pointer_arg(0), test::pointer_arg(1), test::value_arg(n, "int")};
  return spec;
}

struct Prepared {
  test::TempDir dir;
  std::unique_ptr<capture::CaptureReader> capture;
  std::unique_ptr<Backend> backend;
  std::string kernel;
};

std::unique_ptr<Prepared> prepare(const test::CudaLaunchSpec& spec) {
  auto p = std::make_unique<Prepared>();
  p->kernel = test::record_cuda_launch(p->dir / "capture.h5", spec);
  p->capture =
      std::make_unique<capture::CaptureReader>(capture::CaptureReader::open(p->dir / "capture.h5"));
  p->backend = make_backend("cuda");
  p->backend->prepare(*p->capture, 0, {});
  return p;
}

RunResult compile_and_run(Backend& backend, const Variant& variant, RunOptions options = {}) {
  Compiled compiled = backend.compile(variant);
  EXPECT_TRUE(compiled.ok || !compiled.diagnostics.empty());
  return backend.run(compiled, options);
}

Variant source_variant(const std::string& text,
                       replay::Compiler compiler = replay::Compiler::nvrtc) {
  Variant v;
  v.source_name = "variant.cu";
  v.source_text = text;
  v.entry = "stencil2d";
  v.compiler = compiler;
  return v;
}

// Every test kernel through the three compile paths: the recorded cubin, NVRTC and Clang/NVPTX
// from its source, each verified.
TEST(CudaBackend, EveryTestKernelReplaysThroughEveryCompilePath) {
  R3_REQUIRE_GPU();
  const std::pair<const char*, test::CudaLaunchSpec> kernels[] = {
      {"saxpy", saxpy_spec()},
      {"stencil2d", stencil_spec()},
      {"spmv_csr", spmv_spec()},
      {"gather", gather_spec()},
      {"sum_squares", reduction_spec()}};
  for (const auto& [name, spec] : kernels) {
    auto p = prepare(spec);
    for (replay::Compiler compiler :
         {replay::Compiler::recorded, replay::Compiler::nvrtc, replay::Compiler::clang}) {
      if (compiler == replay::Compiler::clang && !R3_HAVE_LLVM) continue;
      Variant variant;
      variant.compiler = compiler;
      if (compiler != replay::Compiler::recorded) {
        variant.source_name = std::string(name) + ".cu";
        variant.source_text = spec.source;
        variant.entry = spec.entry;
      }
      Compiled compiled = p->backend->compile(variant);
      ASSERT_TRUE(compiled.ok) << name << " " << replay::to_string(compiler) << ": "
                               << compiled.diagnostics;
      RunResult result = p->backend->run(compiled, {});
      EXPECT_EQ(result.outcome, Outcome::ok)
          << name << " " << replay::to_string(compiler) << ": " << result.message;
    }
  }
}

TEST(CudaBackend, ReplaysTheRecordedCubinVerifiedAndTimed) {
  R3_REQUIRE_GPU();
  auto p = prepare(stencil_spec());
  Variant recorded;
  recorded.compiler = replay::Compiler::recorded;
  Compiled compiled = p->backend->compile(recorded);
  ASSERT_TRUE(compiled.ok) << compiled.diagnostics;
  EXPECT_GT(compiled.resources.registers, 0);
  EXPECT_GE(compiled.resources.spilled_bytes, 0);
  EXPECT_GT(compiled.resources.code_bytes, 0u);
  RunOptions options;
  options.repeats = 7;
  RunResult result = p->backend->run(compiled, options);
  ASSERT_EQ(result.outcome, Outcome::ok) << result.message;
  ASSERT_EQ(result.launches.size(), 2u);
  for (const LaunchResult& launch : result.launches) {
    EXPECT_TRUE(launch.verified);
    EXPECT_EQ(launch.time.samples.size(), 7u);
    EXPECT_GT(launch.time.median, 0);
    ASSERT_EQ(launch.regions.size(), 2u);  // in untouched, out changed
  }
  EXPECT_GT(result.seconds, 0);
  EXPECT_TRUE(p->backend->compile(recorded).from_cache);
}

TEST(CudaBackend, RecordedPtxGoesThroughTheJitWithItsOptions) {
  R3_REQUIRE_GPU();
  auto p = prepare(stencil_spec());
  Variant jit;
  jit.compiler = replay::Compiler::recorded;
  jit.flags = {"-O3", "--maxrregcount=32", "-dlcm=cg"};
  Compiled compiled = p->backend->compile(jit);
  ASSERT_TRUE(compiled.ok) << compiled.diagnostics;
  EXPECT_LE(compiled.resources.registers, 32);
  RunResult result = p->backend->run(compiled, {});
  EXPECT_EQ(result.outcome, Outcome::ok) << result.message;
  // The optimisation level reaches ptxas: unoptimised code is another cubin.
  jit.flags = {"-O0"};
  Compiled unoptimised = p->backend->compile(jit);
  ASSERT_TRUE(unoptimised.ok) << unoptimised.diagnostics;
  EXPECT_NE(unoptimised.resources.code_bytes, compiled.resources.code_bytes);
  EXPECT_EQ(p->backend->run(unoptimised, {}).outcome, Outcome::ok);

  jit.flags = {"-O7"};
  Compiled bad = p->backend->compile(jit);
  EXPECT_FALSE(bad.ok);
  EXPECT_TRUE(contains(bad.diagnostics, "-O0 to -O4")) << bad.diagnostics;
}

TEST(CudaBackend, NvrtcVariantsCompileWithFlagsAndVerify) {
  R3_REQUIRE_GPU();
  auto p = prepare(stencil_spec());
  Variant fast = source_variant(stencil_variant(""));
  fast.flags = {"--use_fast_math", "-O3"};
  RunResult result = compile_and_run(*p->backend, fast);
  EXPECT_EQ(result.outcome, Outcome::ok) << result.message;

  Variant broken = source_variant(stencil_variant("v = undeclared_name;"));
  Compiled compiled = p->backend->compile(broken);
  EXPECT_FALSE(compiled.ok);
  EXPECT_TRUE(contains(compiled.diagnostics, "variant.cu(8)")) << compiled.diagnostics;
  EXPECT_EQ(p->backend->run(compiled, {}).outcome, Outcome::compile_error);
}

TEST(CudaBackend, ClangNvptxVariantsRunThroughTheirPassPipeline) {
  R3_REQUIRE_GPU();
  if (!R3_HAVE_LLVM) GTEST_SKIP() << "this build has no Clang/LLVM";
  auto p = prepare(stencil_spec());
  Variant clang = source_variant(stencil_variant(""), replay::Compiler::clang);
  clang.passes = "default<O3>";
  Compiled compiled = p->backend->compile(clang);
  ASSERT_TRUE(compiled.ok) << compiled.diagnostics;
  RunResult result = p->backend->run(compiled, {});
  EXPECT_EQ(result.outcome, Outcome::ok) << result.message;

  clang.passes = "function(no-such-pass)";
  Compiled bad = p->backend->compile(clang);
  EXPECT_FALSE(bad.ok);
  EXPECT_TRUE(contains(bad.diagnostics, "no-such-pass")) << bad.diagnostics;
}

TEST(CudaBackend, WrongResultsAreFoundOnTheGpuWithTheFirstBadIndex) {
  R3_REQUIRE_GPU();
  auto p = prepare(stencil_spec());
  RunResult wrong = compile_and_run(*p->backend, source_variant(stencil_variant("v += 1e-2f;")));
  ASSERT_EQ(wrong.outcome, Outcome::wrong_result);
  ASSERT_FALSE(wrong.launches.empty());
  const RegionCheck& out = wrong.launches[0].regions.at(1);
  EXPECT_EQ(out.name, "out");
  EXPECT_FALSE(out.passed);
  EXPECT_EQ(out.mismatches, std::uint64_t((kN - 2) * (kN - 2)));
  EXPECT_EQ(out.first_bad_index, kN + 1);  // the first interior point
  EXPECT_NEAR(out.max_error, 1e-2, 1e-3);

  // Writing memory the recorded launch left alone is wrong too.
  RunResult scribbles = compile_and_run(
      *p->backend,
      source_variant(stencil_variant("if (i == 5 * n + 7) const_cast<float*>(in)[i] = 0.0f;")));
  ASSERT_EQ(scribbles.outcome, Outcome::wrong_result);
  EXPECT_TRUE(contains(scribbles.message, "'in' was modified")) << scribbles.message;
  EXPECT_EQ(scribbles.launches[0].regions.at(0).first_bad_index, 5 * kN + 7);
}

// A recorded launch that changed nothing: every delta is 0, as in Rodinia's backprop where the
// hidden units saturate, so the weights come out as they went in. A candidate that does 1/16 of
// the work matches the recording; on the second input (the floating-point inputs moved a
// little, the recorded code run on them) it does not. A candidate that computes the same in
// another order still passes there.
const char* kAdjust = R"(
__global__ void adjust(const float* delta, float* w, float* oldw, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float change = 0.3f * delta[i] + 0.3f * oldw[i];
  w[i] += change;
  oldw[i] = change;
}
)";

TEST(CudaBackend, SkippedWorkThatTheRecordingCannotShowFailsOnTheSecondInput) {
  R3_REQUIRE_GPU();
  test::CudaLaunchSpec spec;
  spec.source = kAdjust;
  spec.entry = "adjust";
  const int n = 1 << 16;
  spec.grid = {n / 256, 1, 1};
  spec.block = {256, 1, 1};
  std::vector<float> delta(n, 0.0f), w(n), oldw(n, 0.0f);
  for (int i = 0; i < n; ++i) w[i] = 0.5f + 0.25f * std::sin(0.01f * i);
  spec.buffers.push_back({"delta", test::bytes_of(delta), capture::ElementType::f32, {}});
  spec.buffers.push_back({"w", test::bytes_of(w), capture::ElementType::f32, {}});
  spec.buffers.push_back({"oldw", test::bytes_of(oldw), capture::ElementType::f32, {}});
  spec.args = {test::pointer_arg(0), test::pointer_arg(1), test::pointer_arg(2),
               test::value_arg(n, "int")};
  auto p = prepare(spec);
  auto variant = [](const std::string& guard, const std::string& change) {
    return source_variant(std::string(R"(
__global__ void adjust(const float* delta, float* w, float* oldw, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  )") + guard + R"(
  float change = )" + change + R"(;
  w[i] += change;
  oldw[i] = change;
}
)");
  };
  Variant recorded;
  recorded.compiler = replay::Compiler::recorded;
  RunResult original = compile_and_run(*p->backend, recorded);
  auto named = [](Variant v) {
    v.entry = "adjust";
    return v;
  };
  EXPECT_EQ(original.outcome, Outcome::ok) << original.message;
  RunResult lazy =
      compile_and_run(*p->backend, named(variant("if (i >= n / 16) return;", "0.3f * delta[i] + 0.3f * oldw[i]")));
  ASSERT_EQ(lazy.outcome, Outcome::wrong_result) << "a sixteenth of the work passed";
  EXPECT_TRUE(contains(lazy.message, "on a second input")) << lazy.message;
  EXPECT_TRUE(contains(lazy.message, "region 'w'")) << lazy.message;
  RunResult reordered =
      compile_and_run(*p->backend, named(variant("if (i >= n) return;", "0.3f * (delta[i] + oldw[i])")));
  EXPECT_EQ(reordered.outcome, Outcome::ok) << reordered.message;
  RunResult same = compile_and_run(*p->backend, named(variant("if (i >= n) return;", "0.3f * delta[i] + 0.3f * oldw[i]")));
  EXPECT_EQ(same.outcome, Outcome::ok) << same.message;
}

TEST(CudaBackend, NewBlockShapesDeriveTheGridAndImpossibleOnesFailCleanly) {
  R3_REQUIRE_GPU();
  auto p = prepare(stencil_spec());
  Variant reshaped = source_variant(kStencil);
  reshaped.block = capture::Dim3{64, 2, 1};
  RunResult ok = compile_and_run(*p->backend, reshaped);
  EXPECT_EQ(ok.outcome, Outcome::ok) << ok.message;

  reshaped.block = capture::Dim3{64, 32, 1};
  RunResult too_big = compile_and_run(*p->backend, reshaped);
  EXPECT_EQ(too_big.outcome, Outcome::launch_error);
  EXPECT_TRUE(contains(too_big.message, "2048 threads")) << too_big.message;

  reshaped.block = capture::Dim3{64, 2, 1};
  EXPECT_EQ(compile_and_run(*p->backend, reshaped).outcome, Outcome::ok);
}

// A sandbox for the CUDA backend on a stencil launch recorded into `dir`.
SandboxSetup stencil_sandbox(const test::TempDir& dir) {
  test::record_cuda_launch(dir / "stencil.h5", stencil_spec());
  SandboxSetup setup;
  setup.helper = R3_TEST_SANDBOX;
  setup.capture = dir / "stencil.h5";
  setup.backend = "cuda";
  setup.kernels = {{0, {}}};
  setup.timeout_s = 120;
  return setup;
}

// A sticky error loses the CUDA context of its process for good: the sandbox replaces the
// child, and the next candidate runs in a fresh one.
TEST(CudaBackend, ACrashingVariantIsALaunchErrorAndTheNextCandidateRunsInAFreshSandbox) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  SandboxSetup setup = stencil_sandbox(dir);
  Sandbox sandbox(setup);

  Request crash;
  crash.variant = source_variant(stencil_variant("", "out[i + (1ll << 40)]"));
  Evaluation crashed = sandbox.evaluate(crash);
  EXPECT_EQ(crashed.outcome, Outcome::launch_error) << crashed.message;
  EXPECT_TRUE(contains(crashed.message, "cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS"))
      << crashed.message;
  EXPECT_TRUE(crashed.process_lost);

  Request recorded;
  recorded.variant.compiler = replay::Compiler::recorded;
  Evaluation after = sandbox.evaluate(recorded);
  EXPECT_EQ(after.outcome, Outcome::ok) << after.message;
  EXPECT_EQ(sandbox.restarts(), 1u);
  EXPECT_GT(after.resources.registers, 0);
  // The new child was started within the crashing candidate's time, not the next one's.
  EXPECT_LT(after.seconds, crashed.seconds)
      << "the next candidate paid for the restart: " << after.seconds << " s against "
      << crashed.seconds << " s";
}

// A tiled matrix multiply written for 32 x 32 blocks (its shared tiles and index arithmetic use
// TILE): launched with 32 x 16 the derived grid doubles in y and the kernel writes a whole matrix
// past C, as the launch level's candidates do on real kernels.
const char* kTiledMatmul = R"(
#define TILE 32
__global__ void matmul(const float* A, const float* B, float* C, int n) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float sum = 0.0f;
  for (int k = 0; k < n; k += TILE) {
    As[ty][tx] = A[row * n + k + tx];
    Bs[ty][tx] = B[(k + ty) * n + col];
    __syncthreads();
    for (int j = 0; j < TILE; ++j) sum += As[ty][j] * Bs[j][tx];
    __syncthreads();
  }
  C[row * n + col] = sum;
}
)";

test::CudaLaunchSpec matmul_spec(int n) {
  test::CudaLaunchSpec spec;
  spec.source = kTiledMatmul;
  spec.entry = "matmul";
  spec.grid = {static_cast<std::uint32_t>(n / 32), static_cast<std::uint32_t>(n / 32), 1};
  spec.block = {32, 32, 1};
  std::vector<float> a(n * n), b(n * n), c(n * n, 0.0f);
  for (int i = 0; i < n * n; ++i) {
    a[i] = std::sin(0.001f * i);
    b[i] = std::cos(0.002f * i);
  }
  spec.buffers.push_back({"A", test::bytes_of(a), capture::ElementType::f32, {}});
  spec.buffers.push_back({"B", test::bytes_of(b), capture::ElementType::f32, {}});
  spec.buffers.push_back({"C", test::bytes_of(c), capture::ElementType::f32, {}});
  spec.args = {test::pointer_arg(0), test::pointer_arg(1), test::pointer_arg(2),
               test::value_arg(n, "int")};
  return spec;
}

// Independence: a fixed list of candidates (recorded code, JIT and NVRTC rebuilds, a block shape
// that writes out of bounds, a wrong result, a crash, a hang) evaluated in three shuffled orders
// on one sandbox each gives every candidate the same outcome each time, and times within noise.
TEST(CudaBackend, CandidatesOutcomesDoNotDependOnWhatRanBefore) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  const int n = 512;
  test::record_cuda_launch(dir / "matmul.h5", matmul_spec(n));
  SandboxSetup setup;
  setup.helper = R3_TEST_SANDBOX;
  setup.capture = dir / "matmul.h5";
  setup.backend = "cuda";
  setup.kernels = {{0, {}}};
  setup.timeout_s = 10;
  auto source = [&](const std::string& text) {
    Request r;
    r.variant.source_text = text;
    r.variant.entry = "matmul";
    r.variant.compiler = replay::Compiler::nvrtc;
    r.options.warmup = 2;
    r.options.repeats = 20;
    return r;
  };
  auto replace = [](std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  std::vector<std::pair<std::string, Request>> list;
  Request recorded = source("");
  recorded.variant.compiler = replay::Compiler::recorded;
  recorded.variant.entry.clear();
  list.push_back({"recorded", recorded});
  Request jit = recorded;
  jit.variant.flags = {"-O3"};
  list.push_back({"recorded PTX, -O3", jit});
  Request half_block = recorded;
  half_block.variant.block = capture::Dim3{32, 16, 1};
  list.push_back({"block 32x16", half_block});
  list.push_back({"nvrtc", source(kTiledMatmul)});
  Request fast = source(kTiledMatmul);
  fast.variant.flags = {"--use_fast_math"};
  list.push_back({"nvrtc fast math", fast});
  list.push_back({"wrong", source(replace(kTiledMatmul, "= sum;", "= sum + 1.0f;"))});
  list.push_back({"far write", source(replace(kTiledMatmul, "C[row * n + col]",
                                              "C[row * n + col + (1ll << 40)]"))});
  list.push_back({"hang", source(replace(kTiledMatmul, "C[row * n + col] = sum;",
                                         "while (sum == sum) sum = sum * 1.0f;"
                                         " C[row * n + col] = sum;"))});
  std::vector<std::map<std::string, Outcome>> outcomes;
  std::map<std::string, std::vector<double>> times;
  std::map<std::string, std::set<std::string>> messages;
  for (unsigned seed : {1u, 2u, 3u}) {
    std::vector<std::size_t> order(list.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937(seed));
    Sandbox sandbox(setup);
    std::map<std::string, Outcome> got;
    std::string ran;
    for (std::size_t i : order) {
      Evaluation e = sandbox.evaluate(list[i].second);
      got[list[i].first] = e.outcome;
      ran += list[i].first + " -> " + std::string(to_string(e.outcome)) + "; ";
      if (e.outcome == Outcome::ok) times[list[i].first].push_back(e.run.seconds);
      if (e.outcome == Outcome::wrong_result) messages[list[i].first].insert(e.message);
    }
    SCOPED_TRACE("order " + std::to_string(seed) + ": " + ran);
    EXPECT_EQ(got["recorded"], Outcome::ok);
    EXPECT_EQ(got["nvrtc"], Outcome::ok);
    EXPECT_EQ(got["wrong"], Outcome::wrong_result);
    EXPECT_EQ(got["hang"], Outcome::timeout);
    EXPECT_NE(got["block 32x16"], Outcome::ok);
    if (!outcomes.empty()) {
      EXPECT_EQ(got, outcomes.front()) << "an outcome depended on the order: " << ran;
    }
    outcomes.push_back(got);
  }
  for (const auto& [name, found] : messages)
    EXPECT_EQ(found.size(), 1u) << name << " failed differently in different orders";
  for (const auto& [name, samples] : times) {
    ASSERT_EQ(samples.size(), 3u) << name;
    const auto [low, high] = std::minmax_element(samples.begin(), samples.end());
    EXPECT_LT(*high / *low, 1.25) << name << ": " << *low << " s to " << *high << " s";
  }
}

// A template kernel: NVRTC and Clang compile the recorded instance of the source, whether the
// entry is left out or names the template alone.
TEST(CudaBackend, TemplateKernelsCompileTheirRecordedInstanceWithNvrtc) {
  R3_REQUIRE_GPU();
  test::CudaLaunchSpec spec = saxpy_spec();
  spec.source = R"(
template <int UNROLL>
__global__ void saxpy_t(int n, float a, const float* x, float* y) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * UNROLL;
  for (int u = 0; u < UNROLL; ++u) if (i + u < n) y[i + u] = a * x[i + u] + y[i + u];
}
)";
  spec.entry = "saxpy_t<2>";
  spec.grid.x = (spec.grid.x + 1) / 2;
  auto p = prepare(spec);
  const capture::Kernel& kernel = p->capture->kernels().at(0);
  EXPECT_EQ(capture::instance_name(kernel.demangled_name), "saxpy_t<2>") << kernel.demangled_name;
  EXPECT_EQ(p->capture->find_kernel("saxpy_t<2>"), 0u);
  for (replay::Compiler compiler : {replay::Compiler::nvrtc, replay::Compiler::clang}) {
    if (compiler == replay::Compiler::clang && !R3_HAVE_LLVM) continue;
    for (std::string entry : {"", "saxpy_t", "saxpy_t<2>"}) {
      Variant v;
      v.source_text = spec.source;
      v.entry = entry;
      v.compiler = compiler;
      RunResult result = compile_and_run(*p->backend, v);
      EXPECT_EQ(result.outcome, Outcome::ok)
          << replay::to_string(compiler) << ", entry '" << entry << "': " << result.message;
    }
  }
}

// Candidates compiled ahead on the child's threads: one leaves a sticky error (the child is
// replaced), the others come back verified, whether compiled ahead or, after the restart, in turn.
TEST(CudaBackend, CandidatesCompiledAheadSurviveACandidateThatLosesTheContext) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  SandboxSetup setup = stencil_sandbox(dir);
  setup.compile_threads = 4;
  Sandbox sandbox(setup);
  std::vector<Request> share(6);
  for (std::size_t i = 0; i < share.size(); ++i) {
    share[i].variant =
        source_variant(stencil_variant("v *= 1.0f + 0.0f * " + std::to_string(i) + ";"));
  }
  share[2].variant = source_variant(stencil_variant("", "out[i + (1ll << 40)]"));
  sandbox.precompile(share);
  for (std::size_t i = 0; i < share.size(); ++i) {
    Evaluation e = sandbox.evaluate(share[i]);
    if (i == 2) {
      EXPECT_EQ(e.outcome, Outcome::launch_error) << e.message;
      EXPECT_TRUE(e.process_lost);
    } else {
      EXPECT_EQ(e.outcome, Outcome::ok) << i << ": " << e.message;
      EXPECT_GT(e.resources.registers, 0);
    }
  }
  EXPECT_EQ(sandbox.restarts(), 1u);
}

// The bytes after an allocation, up to the next region or the end of the mapping, are no
// region's: a variant that writes there is caught, and they are cleared for the next one.
TEST(CudaBackend, AWritePastTheEndOfAnAllocationIsFound) {
  R3_REQUIRE_GPU();
  auto p = prepare(saxpy_spec());
  std::vector<capture::Region> regions = p->capture->kernels().at(0).launches.at(0).prologue;
  std::sort(regions.begin(), regions.end(),
            [](const auto& a, const auto& b) { return a.address < b.address; });
  const std::uint64_t granule = 2ull << 20;
  const capture::Region* padded = nullptr;
  for (std::size_t i = 0; i < regions.size() && !padded; ++i) {
    const std::uint64_t end = regions[i].address + regions[i].size;
    const std::uint64_t next = i + 1 < regions.size() ? regions[i + 1].address : ~0ull;
    if (end % granule != 0 && next >= end + 64) padded = &regions[i];
  }
  if (!padded) GTEST_SKIP() << "the driver left no bytes between or after these allocations";
  const std::string target = padded->name == "x" ? "const_cast<float*>(x)" : "y";
  Variant past_end;
  past_end.source_text = std::string(R"(
__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
  if (i < 3) ()") + target +
                         R"()[n + 4 + i] = 1.0f;
}
)";
  past_end.entry = "saxpy";
  past_end.compiler = replay::Compiler::nvrtc;
  RunResult result = compile_and_run(*p->backend, past_end);
  EXPECT_EQ(result.outcome, Outcome::wrong_result) << result.message;
  // 1.0f is 00 00 80 3f: two bytes change per float, the first 18 bytes past the end.
  EXPECT_TRUE(contains(result.message,
                       "out-of-bounds write: 6 bytes changed in memory that no "
                       "recorded region covers, the first at byte 18 past the "
                       "end of region '" +
                           padded->name + "'"))
      << result.message;

  Variant recorded;
  recorded.compiler = replay::Compiler::recorded;
  RunResult clean = compile_and_run(*p->backend, recorded);
  EXPECT_EQ(clean.outcome, Outcome::ok) << clean.message;
}

// Holds all free device memory but `keep` bytes until destroyed.
class DeviceMemoryHog {
 public:
  explicit DeviceMemoryHog(std::size_t keep) {
    const cuda::Driver& d = cuda::driver();
    for (std::size_t chunk : {std::size_t(1) << 30, std::size_t(64) << 20, std::size_t(2) << 20}) {
      while (true) {
        std::size_t free = 0, total = 0;
        R3_CU(d.cuMemGetInfo(&free, &total));
        if (free < keep + chunk) break;
        CUdeviceptr p = 0;
        if (d.cuMemAlloc(&p, chunk) != CUDA_SUCCESS) break;
        held_.push_back(p);
      }
    }
  }
  ~DeviceMemoryHog() {
    for (CUdeviceptr p : held_) cuda::driver().cuMemFree(p);
  }
  std::size_t free_bytes() const {
    std::size_t free = 0, total = 0;
    cuda::driver().cuMemGetInfo(&free, &total);
    return free;
  }

 private:
  std::vector<CUdeviceptr> held_;
};

// With room for the recorded regions but not for their pristine copies, the copies stay on the
// host and every restore is a host-to-device copy; results are verified as before.
TEST(CudaBackend, RestoresFromHostMemoryWhenDeviceMemoryIsShort) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  const int n = 1 << 24;  // 64 MiB per buffer
  test::record_cuda_launch(dir / "saxpy.h5", saxpy_spec(n));
  auto capture = capture::CaptureReader::open(dir / "saxpy.h5");
  cuda::Device::instance().make_current();
  const std::size_t placement = 2 * (std::size_t(n) * 4 + (2 << 20));
  DeviceMemoryHog hog(placement + (40 << 20));
  auto backend = make_backend("cuda");
  backend->prepare(capture, 0, {});
  EXPECT_TRUE(contains(backend->placement(), "restored from host memory")) << backend->placement();

  Variant recorded;
  recorded.compiler = replay::Compiler::recorded;
  RunResult result = compile_and_run(*backend, recorded);
  ASSERT_EQ(result.outcome, Outcome::ok) << result.message;
  EXPECT_TRUE(result.launches.at(0).verified);
  EXPECT_GT(result.launches.at(0).restore_seconds, 0);

  Variant wrong;
  wrong.source_text = std::string(kSaxpy);
  wrong.source_text.replace(wrong.source_text.find("a * x[i]"), 8, "a * x[i] * 1.001f");
  wrong.entry = "saxpy";
  wrong.compiler = replay::Compiler::nvrtc;
  RunResult caught = compile_and_run(*backend, wrong);
  EXPECT_EQ(caught.outcome, Outcome::wrong_result) << caught.message;
}

TEST(CudaBackend, RelocatesWhenTheRecordedAddressesAreTakenAndRewritesPointerTables) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  const std::string kernel = test::record_cuda_launch(dir / "gather.h5", gather_spec());
  auto capture = capture::CaptureReader::open(dir / "gather.h5");
  // Take the recorded address range first.
  std::uint64_t low = ~0ull, high = 0;
  for (const capture::Region& r : capture.kernels()[0].launches[0].prologue) {
    low = std::min(low, r.address);
    high = std::max(high, r.address + r.size);
  }
  const std::uint64_t granule = 2ull << 20;
  low = low / granule * granule;
  high = (high + granule - 1) / granule * granule;
  cuda::Device::instance().make_current();
  CUdeviceptr taken = 0;
  R3_CU(cuda::driver().cuMemAddressReserve(&taken, high - low, 0, low, 0));

  auto backend = make_backend("cuda");
  backend->prepare(capture, 0, {});
  EXPECT_EQ(backend->address_mode(), AddressMode::relocated) << backend->placement();
  Variant recorded;
  recorded.compiler = replay::Compiler::recorded;
  RunResult result = compile_and_run(*backend, recorded);
  EXPECT_EQ(result.outcome, Outcome::ok) << result.message;
  cuda::driver().cuMemAddressFree(taken, high - low);
}

// Module globals: each variant's module has its own, restored by name before every launch and
// verified after it.
TEST(CudaBackend, ModuleGlobalsAreRestoredAndVerifiedInEachVariantsModule) {
  R3_REQUIRE_GPU();
  const char* source = R"(
__device__ float bias;
__device__ unsigned int launches;
extern "C" __global__ void biased(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + bias;
  if (i == 0) atomicAdd(&launches, 1u);
}
)";
  test::CudaLaunchSpec spec;
  spec.source = source;
  spec.entry = "biased";
  const int n = 1024;
  spec.grid = {n / 128, 1, 1};
  spec.block = {128, 1, 1};
  std::vector<float> in(n, 1.5f), out(n, 0.0f);
  spec.buffers.push_back({"in", test::bytes_of(in), capture::ElementType::f32, {}});
  spec.buffers.push_back({"out", test::bytes_of(out), capture::ElementType::f32, {}});
  spec.args = {test::pointer_arg(0), test::pointer_arg(1), test::value_arg(n, "int")};
  spec.globals = {{"bias", test::bytes_of(std::vector<float>{0.25f})},
                  {"launches", test::bytes_of(std::vector<unsigned>{41})}};
  auto p = prepare(spec);
  Variant recorded;
  recorded.compiler = replay::Compiler::recorded;
  // Every timed run finds bias and the counter as recorded (else the counter ends above 42).
  RunResult ok = compile_and_run(*p->backend, recorded);
  ASSERT_EQ(ok.outcome, Outcome::ok) << ok.message;
  EXPECT_EQ(ok.launches.at(0).regions.size(), 4u);  // in, out, bias, launches

  Variant twice;
  twice.source_name = "biased.cu";
  twice.source_text = std::string(source).replace(std::string(source).find("1u"), 2, "2u");
  twice.entry = "biased";
  twice.compiler = replay::Compiler::nvrtc;
  RunResult wrong = compile_and_run(*p->backend, twice);
  ASSERT_EQ(wrong.outcome, Outcome::wrong_result);
  EXPECT_TRUE(contains(wrong.message, "region 'launches' differs")) << wrong.message;
}

// A candidate that keeps its result in its own __device__ variables and copies it on later
// runs: the variables are put back to their initial values before every run, so the memo is
// never there and it is as slow as the same kernel without it (docs/security.md).
TEST(CudaBackend, AResultMemoisedInDeviceVariablesIsNotFaster) {
  R3_REQUIRE_GPU();
  auto memoising = [](bool use_memo) {
    return std::string(R"(
__device__ unsigned finished;
__device__ int ready;
__device__ float memo[)") + std::to_string(kN * kN) + R"(];
__global__ void stencil2d(const float* in, float* out, int n, float alpha) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  bool inside = x >= 1 && y >= 1 && x < n - 1 && y < n - 1;
  int i = y * n + x;
  if ()" + (use_memo ? "ready" : "false") + R"() {
    if (inside) out[i] = memo[i];
    return;
  }
  if (inside) {
    float v = in[i] + alpha * (in[i - n] + in[i + n] + in[i - 1] + in[i + 1] - 4.0f * in[i]);
    for (int k = 0; k < 4000; ++k) asm volatile("" : "+f"(v));  // slow, as computing is
    out[i] = v;
    memo[i] = v;
  }
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    __threadfence();
    if (atomicAdd(&finished, 1u) + 1 == gridDim.x * gridDim.y) ready = 1;  // all blocks done
  }
}
)";
  };
  auto p = prepare(stencil_spec());
  RunOptions options;
  options.repeats = 20;
  std::vector<double> ratios;
  for (int round = 0; round < 3; ++round) {
    RunResult memo = compile_and_run(*p->backend, source_variant(memoising(true)), options);
    RunResult plain = compile_and_run(*p->backend, source_variant(memoising(false)), options);
    ASSERT_EQ(memo.outcome, Outcome::ok) << memo.message;
    ASSERT_EQ(plain.outcome, Outcome::ok) << plain.message;
    ratios.push_back(memo.seconds / plain.seconds);
  }
  std::sort(ratios.begin(), ratios.end());
  EXPECT_GT(ratios[1], 0.5) << "the memoised kernel ran faster than it computes";
}

TEST(CudaBackend, L2FlushBetweenTimedRuns) {
  R3_REQUIRE_GPU();
  auto p = prepare(stencil_spec());
  Variant recorded;
  recorded.compiler = replay::Compiler::recorded;
  RunOptions options;
  options.flush_l2 = true;
  options.repeats = 5;
  RunResult result = compile_and_run(*p->backend, recorded, options);
  ASSERT_EQ(result.outcome, Outcome::ok) << result.message;
  EXPECT_EQ(result.launches[0].time.samples.size(), 5u);
}

// `r3 replay` in its own process: at the recorded addresses where the driver grants them, else
// relocated (the driver of a new process has usually reserved them for itself).
TEST(CudaBackend, R3ReplayRunsCudaCaptures) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  test::record_cuda_launch(dir / "stencil.h5", stencil_spec());
  test::write_text_file(dir / "variant.cu", stencil_variant(""));
  auto recorded = test::run_process({R3_TEST_R3, "replay", (dir / "stencil.h5").string()});
  EXPECT_EQ(recorded.exit_code, 0) << recorded.out << recorded.err;
  EXPECT_TRUE(contains(recorded.out, "same address (") || contains(recorded.out, "relocated ("))
      << recorded.out;
  EXPECT_TRUE(contains(recorded.out, "result    ok")) << recorded.out;

  auto variant = test::run_process({R3_TEST_R3, "replay", (dir / "stencil.h5").string(), "--source",
                                    (dir / "variant.cu").string(), "--block", "32,4,1",
                                    "--flags=--use_fast_math", "-n", "5"});
  EXPECT_EQ(variant.exit_code, 0) << variant.out << variant.err;
  EXPECT_EQ(test::count(variant.out, "verified  median"), 2) << variant.out;
}

// A template kernel tuned by its template parameter: the recorded instance matmul_t<16>, the
// built-in parametrise mutator makes TILE tunable (coupled to the 16 x 16 block), and other
// tile sizes run verified on the GPU through the job.
TEST(CudaTuningJob, TunesATemplateKernelsIntegerParameter) {
  R3_REQUIRE_GPU();
  // kTiledMatmul with its tile size a template parameter instead of a macro.
  std::string source = kTiledMatmul;
  source.replace(source.find("#define TILE 32\n__global__ void matmul("),
                 std::string("#define TILE 32\n__global__ void matmul(").size(),
                 "template <int TILE>\n__global__ void matmul_t(");
  test::TempDir dir;
  const int n = 256;
  test::CudaLaunchSpec spec = matmul_spec(n);
  spec.source = source;
  spec.entry = "matmul_t<16>";
  spec.grid = {n / 16, n / 16, 1};
  spec.block = {16, 16, 1};
  const std::string kernel = test::record_cuda_launch(dir / "matmul.h5", spec);
  test::write_text_file(dir / "matmul.cu", source);
  test::write_text_file(dir / "tune.yaml",
                        "capture: matmul.h5\nbackend: cuda\nkernels:\n  - name: " + kernel +
                            "\n    source: matmul.cu\n"
                            "search:\n  batch_size: 4\n  levels:\n"
                            "    source: {mutators: [parametrise]}\n"
                            "    compiler: {enabled: false}\n    launch: {enabled: false}\n"
                            "budget:\n  evaluations: 24\n  wall_time: 4m\n"
                            "timing:\n  confirm_repeats: 10\n");
  auto result = test::run_process(
      {R3_TEST_MPIEXEC, "-n", "3", "--oversubscribe", R3_TEST_R3_MPI, (dir / "tune.yaml").string()},
      std::chrono::seconds(300), {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
  ASSERT_FALSE(result.timed_out) << result.err;
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::string csv;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir / "r3-results"))
    if (entry.path().filename() == "candidates.csv") csv = test::read_text_file(entry.path());
  std::set<std::string> verified_tiles;
  std::istringstream rows(csv);
  for (std::string row; std::getline(rows, row);) {
    const std::size_t at = row.find("R3_TILE_0=");
    if (at == std::string::npos || row.find(",ok,") == std::string::npos) continue;
    verified_tiles.insert(row.substr(at + 10, row.find_first_not_of("0123456789", at + 10) - at - 10));
  }
  EXPECT_TRUE(contains(result.err, "template parameter TILE") || contains(csv, "template parameter TILE"))
      << result.err;
  EXPECT_GE(verified_tiles.size(), 2u) << "tile sizes verified: " << verified_tiles.size() << "\n"
                                        << csv;
  std::printf("%s\n", result.err.c_str());
}

}  // namespace
}  // namespace r3::replay

namespace r3::replay {
namespace {

// The tuning job on a GPU: two evaluators share the GPU (each its own sandbox), the compiler and
// launch levels search NVRTC flags and block shapes, the winner is confirmed, and the results
// directory is written.
TEST(CudaTuningJob, TunesACudaCaptureWithTwoEvaluators) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  const std::string kernel = test::record_cuda_launch(dir / "stencil.h5", stencil_spec());
  test::write_text_file(dir / "stencil.cu", kStencil);
  test::write_text_file(dir / "tune.yaml",
                        "capture: stencil.h5\nbackend: cuda\nkernels:\n"
                        "  - name: " +
                            kernel +
                            "\n    source: stencil.cu\n    entry: stencil2d\n"
                            "search:\n  batch_size: 6\n"
                            "  levels:\n    source: {enabled: false}\n"
                            "budget:\n  evaluations: 30\n  wall_time: 4m\n"
                            "timing:\n  confirm_repeats: 20\n");
  auto result = test::run_process(
      {R3_TEST_MPIEXEC, "-n", "3", "--oversubscribe", R3_TEST_R3_MPI, (dir / "tune.yaml").string()},
      std::chrono::seconds(300), {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
  ASSERT_FALSE(result.timed_out) << result.err;
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.err, "confirmed")) << result.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "r3-results" / "report.html"));
  std::filesystem::path best;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir / "r3-results"))
    if (entry.path().filename() == "best.yaml") best = entry.path();
  ASSERT_FALSE(best.empty()) << "no best.yaml in the results";
  const std::string fragment = test::read_text_file(best);
  EXPECT_TRUE(contains(fragment, kernel)) << fragment;
  // The best configuration replays, verified, on the GPU.
  auto replayed = test::run_process({R3_TEST_R3, "replay", "--config", best.string()});
  EXPECT_EQ(replayed.exit_code, 0) << fragment << replayed.out << replayed.err;
  EXPECT_TRUE(contains(replayed.out, "result    ok")) << replayed.out;
  std::printf("%s\n", result.err.c_str());
}

}  // namespace
}  // namespace r3::replay

// r3's reference copies live in device memory a kernel can reach; the keyed hash they are
// checked with after every candidate sees a change of any one byte (the last, partial word
// too), and agrees with itself where nothing changed. Another key gives another hash.
TEST(GpuCompare, AKeyedHashSeesAChangeOfAnyByte) {
  R3_REQUIRE_GPU_FOR("the check of r3's reference copies");
  namespace cuda = r3::replay::cuda;
  cuda::Device::instance().make_current();
  const cuda::Driver& d = cuda::driver();
  std::vector<unsigned char> bytes(1'000'003);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 31 + 7);
  CUdeviceptr buffer = 0;
  R3_CU(d.cuMemAlloc(&buffer, bytes.size()));
  R3_CU(d.cuMemcpyHtoD(buffer, bytes.data(), bytes.size()));
  cuda::GpuCompare compare;
  const std::uint64_t as_uploaded = compare.keyed_hash(buffer, bytes.size(), nullptr);
  EXPECT_EQ(compare.keyed_hash(buffer, bytes.size(), nullptr), as_uploaded);
  for (std::size_t at : {std::size_t{0}, std::size_t{12345}, bytes.size() - 1}) {
    unsigned char changed = bytes[at] ^ 0x01;
    R3_CU(d.cuMemcpyHtoD(buffer + at, &changed, 1));
    EXPECT_NE(compare.keyed_hash(buffer, bytes.size(), nullptr), as_uploaded) << "byte " << at;
    R3_CU(d.cuMemcpyHtoD(buffer + at, &bytes[at], 1));
    EXPECT_EQ(compare.keyed_hash(buffer, bytes.size(), nullptr), as_uploaded) << "byte " << at;
  }
  // Two words swapped: the place of each word counts.
  std::vector<unsigned char> swapped = bytes;
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
  R3_CU(d.cuMemcpyHtoD(buffer, swapped.data(), 16));
  EXPECT_NE(compare.keyed_hash(buffer, bytes.size(), nullptr), as_uploaded);
  cuda::GpuCompare other;
  R3_CU(d.cuMemcpyHtoD(buffer, bytes.data(), 16));
  EXPECT_NE(other.keyed_hash(buffer, bytes.size(), nullptr), as_uploaded);
  // Several at once (after each candidate): each the hash of its own buffer, in their order.
  const std::vector<cuda::GpuCompare::Buffer> parts = {
      {buffer, bytes.size()}, {buffer + 8, 4096}, {buffer, 13}, {buffer + 4096, 65536}};
  std::vector<std::uint64_t> one_by_one;
  for (const auto& part : parts)
    one_by_one.push_back(compare.keyed_hash(part.bytes, part.size, nullptr));
  EXPECT_EQ(compare.keyed_hashes(parts, nullptr), one_by_one);
  unsigned char changed = bytes[20] ^ 0x80;
  R3_CU(d.cuMemcpyHtoD(buffer + 20, &changed, 1));
  const std::vector<std::uint64_t> after = compare.keyed_hashes(parts, nullptr);
  EXPECT_NE(after[0], one_by_one[0]);
  EXPECT_NE(after[1], one_by_one[1]);
  EXPECT_EQ(after[2], one_by_one[2]) << "byte 20 is not among the first 13";
  EXPECT_EQ(after[3], one_by_one[3]);
  d.cuMemFree(buffer);
}
