// The host compile pipeline: Clang in process -> IR -> pass pipeline -> ORC JIT.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "r3/compiler/host_compiler.hpp"
#include "support/kernel_args.hpp"

namespace {

using namespace r3::compiler;

using Args = r3::test::KernelArgs;

Source source(std::string text, std::string name = "kernel.cpp") {
  Source s;
  s.name = std::move(name);
  s.text = std::move(text);
  return s;
}

const char* kAxpy = R"(
extern "C" void axpy(int n, float a, const float* x, float* y) {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}
)";

TEST(HostCompiler, CompilesAndCallsAKernelWithRecordedArguments) {
  HostCompileResult compiled = compile_host_kernel(source(kAxpy), "axpy", "default<O2>");
  ASSERT_TRUE(compiled.ok()) << compiled.diagnostics;
  EXPECT_EQ(compiled.failed_at, Stage::none);
  EXPECT_GT(compiled.code_bytes, 0u);
  EXPECT_GT(compiled.frontend_seconds, 0.0);
  std::vector<float> x = {1, 2, 3, 4}, y = {10, 20, 30, 40};
  Args().add(4).add(2.5f).add(static_cast<const float*>(x.data())).add(y.data()).call(compiled);
  EXPECT_EQ(y, (std::vector<float>{12.5f, 25, 37.5f, 50}));
}

TEST(HostCompiler, NamespacedTemplateKernelsAndStructArguments) {
  const char* text = R"(
namespace physics {
struct Span { double* data; int count; };
template <class T> void scale(Span s, T factor) {
  for (int i = 0; i < s.count; ++i) s.data[i] *= factor;
}
}  // namespace physics
)";
  HostCompileResult compiled = compile_host_kernel(source(text), "physics::scale<double>", "");
  ASSERT_TRUE(compiled.ok()) << compiled.diagnostics;
  std::vector<double> data = {1, 2, 3};
  struct Span {
    double* data;
    int count;
  } span{data.data(), 3};
  Args().add(span).add(4.0).call(compiled);
  EXPECT_EQ(data, (std::vector<double>{4, 8, 12}));
}

// The generated entry thunk works whatever macros the kernel's source defines: short names
// (N, R, A, I: the template parameters such a thunk would use), min/max, even `inline`.
TEST(HostCompiler, TheEntryThunkWorksWhateverMacrosTheSourceDefines) {
  const char* text = R"(
#define N 512
#define R 3
#define A a_
#define I i_
#define T float
#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
#define type int
#define args nothing
#define offsets nothing
#define kernel nothing
#define inline static
inline T clampf(T v) { return max(0.0f, min(v, 100.0f)); }
extern "C" void saturate(int n, T* A) {
  for (int I = 0; I < n && I < N; ++I) A[I] = clampf(A[I] * R);
}
)";
  HostCompileResult compiled = compile_host_kernel(source(text), "saturate", "default<O2>");
  ASSERT_TRUE(compiled.ok()) << compiled.diagnostics;
  std::vector<float> data = {-1, 2, 50};
  Args().add(3).add(data.data()).call(compiled);
  EXPECT_EQ(data, (std::vector<float>{0, 6, 100}));
}

TEST(HostCompiler, DiagnosticsNameTheFileAndLine) {
  HostCompileResult compiled = compile_host_kernel(
      source("extern \"C\" void k(float* y) {\n  y[0] = 1.0f;\n  y[1] = undefined_name;\n}\n",
             "stencil.cpp"),
      "k", "");
  EXPECT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.failed_at, Stage::frontend);
  EXPECT_NE(compiled.diagnostics.find("stencil.cpp:3:10: error:"), std::string::npos)
      << compiled.diagnostics;
  EXPECT_NE(compiled.diagnostics.find("undefined_name"), std::string::npos);
}

TEST(HostCompiler, AWrongEntryNameIsExplained) {
  HostCompileResult compiled = compile_host_kernel(source(kAxpy), "saxpy", "");
  EXPECT_FALSE(compiled.ok());
  EXPECT_NE(compiled.diagnostics.find("the entry function 'saxpy' could not be called"),
            std::string::npos)
      << compiled.diagnostics;
}

TEST(HostCompiler, ABadPassPipelineIsAClearError) {
  HostCompileResult compiled =
      compile_host_kernel(source(kAxpy), "axpy", "function(instcombine,no-such-pass)");
  EXPECT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.failed_at, Stage::passes);
  EXPECT_NE(compiled.diagnostics.find("invalid pass pipeline 'function(instcombine,no-such-pass)'"),
            std::string::npos)
      << compiled.diagnostics;
  EXPECT_NE(compiled.diagnostics.find("no-such-pass"), std::string::npos);
  EXPECT_EQ(check_pass_pipeline("function(no-such-pass)").empty(), false);
  EXPECT_EQ(check_pass_pipeline("default<O3>"), "");
  EXPECT_EQ(check_pass_pipeline("function(instcombine,loop-unroll),globaldce"), "");
}

TEST(HostCompiler, PipelinesChangeTheCodeButNotTheResult) {
  std::vector<float> reference;
  std::uint64_t smallest = UINT64_MAX, largest = 0;
  for (const char* pipeline :
       {"default<O0>", "default<O1>", "default<O3>", "function(sroa,instcombine,loop-unroll)"}) {
    SCOPED_TRACE(pipeline);
    HostCompileResult compiled = compile_host_kernel(source(kAxpy), "axpy", pipeline);
    ASSERT_TRUE(compiled.ok()) << compiled.diagnostics;
    std::vector<float> x(1000), y(1000, 1.0f);
    for (int i = 0; i < 1000; ++i) x[i] = static_cast<float>(i) * 0.5f;
    Args()
        .add(1000)
        .add(3.0f)
        .add(static_cast<const float*>(x.data()))
        .add(y.data())
        .call(compiled);
    if (reference.empty()) reference = y;
    EXPECT_EQ(y, reference);
    smallest = std::min(smallest, compiled.code_bytes);
    largest = std::max(largest, compiled.code_bytes);
  }
  EXPECT_LT(smallest, largest);  // O3 unrolls and vectorises what O0 leaves alone
}

TEST(HostCompiler, DefinesFlagsAndTheCMathLibrary) {
  const char* text = R"(
#include <cmath>
extern "C" void k(float* y) { y[0] = FACTOR * std::exp(0.0f); }
)";
  Source with_define = source(text);
  with_define.defines["FACTOR"] = "3.0f";
  with_define.flags = {"-ffast-math"};
  HostCompileResult compiled = compile_host_kernel(with_define, "k", "");
  float y = 0;
  Args().add(&y).call(compiled);
  EXPECT_EQ(y, 3.0f);
  EXPECT_FALSE(compile_host_kernel(source(text), "k", "").ok());  // FACTOR undefined
}

TEST(HostCompiler, CompilesFromSeveralThreadsAtOnce) {
  std::vector<HostCompileResult> results(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&results, i] {
      results[i] =
          compile_host_kernel(source(kAxpy), "axpy", i % 2 ? "default<O3>" : "default<O1>");
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.diagnostics;
    std::vector<float> x = {1}, y = {1};
    Args().add(1).add(1.0f).add(static_cast<const float*>(x.data())).add(y.data()).call(r);
    EXPECT_EQ(y[0], 2.0f);
  }
}

}  // namespace
