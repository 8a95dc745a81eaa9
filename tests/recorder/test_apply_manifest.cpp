// recorder/cuda: the manifest `r3 apply` hands libr3apply_cuda.so, and the launch shape the
// library gives a winner.
#include <gtest/gtest.h>

#include "apply_manifest.hpp"
#include "r3/error.hpp"

namespace {

using namespace r3::record::cuda;
using r3::capture::Dim3;

ApplyManifest two_kernels() {
  ApplyManifest m;
  m.architecture = "sm_90";
  AppliedKernel heat;
  heat.kernel = "_Z9heat_stepPKfPfii";
  heat.code = "0.cubin";
  heat.function = "_Z9heat_stepPKfPfii";
  heat.block = Dim3{32, 8, 1};
  heat.speedup = 1.4211;
  heat.tolerances = {{r3::capture::ElementType::f32, 1e-5, 1e-6},
                     {r3::capture::ElementType::f64, 1e-12, 1e-14}};
  AppliedKernel dot;
  dot.kernel = "_Z3dotPKfS0_Pfi";
  dot.code = "dir with space/1.cubin";
  dot.function = "dot_tuned";
  dot.block = Dim3{256, 1, 1};
  dot.keep_grid = true;
  dot.globals = {"scale", "weights"};
  AppliedKernel plain;  // the winner changes the code only
  plain.kernel = "_Z5scalePfi";
  plain.code = "2.cubin";
  plain.function = "_Z5scalePfi";
  m.kernels = {heat, dot, plain};
  return m;
}

TEST(ApplyManifest, ReadsWhatItWrites) {
  const ApplyManifest m = two_kernels();
  EXPECT_EQ(parse_manifest(to_text(m), "manifest"), m);
}

TEST(ApplyManifest, RefusesWhatItDoesNotKnowNamingTheLine) {
  const std::string good = to_text(two_kernels());
  auto error_of = [](const std::string& text) -> std::string {
    try {
      parse_manifest(text, "m.txt");
    } catch (const r3::FormatError& e) {
      return e.what();
    }
    return "";
  };
  // Each text and what its error says (file and line included where there is one).
  const std::string head = "r3-apply-manifest 1\narchitecture sm_90\nkernel k\n";
  const std::pair<std::string, std::string> refused[] = {
      {"r3-apply-manifest 2\narchitecture sm_90\n", "m.txt:1: manifest version"},
      {"r3-tuned 1\n", "not an r3 apply manifest"},
      {"", "empty"},
      {"r3-apply-manifest 1\nkernel k\n  code a\n  function f\nend\n", "no 'architecture'"},
      {head + "  code a\n  function f\n", "has no 'end'"},
      {head + "  code a\n  block 32 0 1\n  function f\nend\n",
       "m.txt:5: '0' is not a positive block dimension"},
      {head + "  code a\n  grid maybe\n", "m.txt:5: 'grid' is 'derived' or 'application'"},
      {head + "  function f\nend\n", "m.txt:5: kernel k has no 'code' or 'function'"},
      {head + "  colour blue\n", "m.txt:4: unknown key 'colour'"},
      {head + "  tolerance f32 1e-5\n", "m.txt:4: 'tolerance' is an element type, rtol and atol"},
      {head + "  tolerance f99 0 0\n", "m.txt:4: 'tolerance'"},
  };
  for (const auto& [text, says] : refused)
    EXPECT_NE(error_of(text).find(says), std::string::npos) << text << "\n-> " << error_of(text);
  EXPECT_EQ(error_of(good), "");
}

TEST(ApplyManifest, AWinnerCoversTheThreadsTheApplicationAskedFor) {
  AppliedKernel k;
  const LaunchDims asked{{100, 30, 1}, {16, 16, 1}};  // 1600 x 480 threads
  // No new block: the application's launch as it is.
  LaunchDims got = winner_launch(k, asked);
  EXPECT_EQ(got.grid, asked.grid);
  EXPECT_EQ(got.block, asked.block);
  // A new block: the grid that covers the same threads, rounding up.
  k.block = Dim3{64, 4, 1};
  got = winner_launch(k, asked);
  EXPECT_EQ(got.block, (Dim3{64, 4, 1}));
  EXPECT_EQ(got.grid, (Dim3{25, 120, 1}));
  k.block = Dim3{96, 7, 1};
  EXPECT_EQ(winner_launch(k, asked).grid, (Dim3{17, 69, 1}));  // ceil(1600/96), ceil(480/7)
  // A kernel that gives each block one item of work keeps the application's grid.
  k.keep_grid = true;
  got = winner_launch(k, asked);
  EXPECT_EQ(got.grid, asked.grid);
  EXPECT_EQ(got.block, (Dim3{96, 7, 1}));
}

}  // namespace
