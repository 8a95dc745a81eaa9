// The simulate backend: every candidate's cost and outcome follow from its variant (the same on
// any evaluator, in any order), the application's own build never fails, the others fail at
// about the configured rate, and compile and run take the configured time.
#include <gtest/gtest.h>

#include <chrono>

#include "r3/capture.hpp"
#include "r3/error.hpp"
#include "r3/replay/backend.hpp"
#include "r3/replay/simulation.hpp"
#include "support/temp_dir.hpp"

namespace r3::replay {
namespace {

std::filesystem::path write_capture(const test::TempDir& dir) {
  capture::CaptureInfo info;
  info.device.backend = "host";
  const auto path = dir / "c.h5";
  auto writer = capture::CaptureWriter::create(path, info);
  capture::Kernel kernel;
  kernel.name = "k";
  const std::size_t id = writer.add_kernel(kernel);
  writer.add_launch(id, capture::Launch{});
  writer.add_launch(id, capture::Launch{});
  writer.close();
  return path;
}

Variant variant_with(int i) {
  Variant v;
  v.flags = {"-O" + std::to_string(i % 4), "-DX=" + std::to_string(i)};
  return v;
}

TEST(SimulatedBackend, CandidatesCostAndEndAsTheirVariantSays) {
  test::TempDir dir;
  auto capture = capture::CaptureReader::open(write_capture(dir));
  SimulationOptions o;
  o.compile_s = 0;
  o.run_s = 0;
  o.failure_rate = 0.2;
  o.kernel_s = 2e-3;
  auto a = make_backend("simulate", encode(o));
  auto b = make_backend("simulate", encode(o));
  a->prepare(capture, 0, {});
  b->prepare(capture, 0, {1});
  RunOptions run;
  run.repeats = 3;

  // The application's build (no flags, the default pipeline) never fails and takes kernel_s.
  Variant original;
  original.passes = "default<O3>";
  const Compiled c = a->compile(original);
  ASSERT_TRUE(c.ok);
  const RunResult r = a->run(c, run);
  ASSERT_EQ(r.outcome, Outcome::ok);
  ASSERT_EQ(r.launches.size(), 2u);
  EXPECT_DOUBLE_EQ(r.seconds, 2 * 2e-3);
  EXPECT_EQ(r.launches[0].time.samples.size(), 3u);

  int failed = 0, faster = 0;
  const int n = 400;
  for (int i = 0; i < n; ++i) {
    const Variant v = variant_with(i);
    const Compiled ca = a->compile(v), cb = b->compile(v);
    ASSERT_EQ(ca.ok, cb.ok) << i;
    if (!ca.ok) {
      ++failed;
      continue;
    }
    const RunResult ra = a->run(ca, run), rb = b->run(cb, run);
    ASSERT_EQ(ra.outcome, rb.outcome) << i;
    if (ra.outcome != Outcome::ok) {
      ++failed;
      continue;
    }
    // The same per launch on another evaluator (b runs one launch, a two).
    EXPECT_DOUBLE_EQ(ra.seconds, 2 * rb.seconds);
    EXPECT_GE(rb.seconds, 0.5 * 2e-3);
    EXPECT_LE(rb.seconds, 1.5 * 2e-3);
    faster += rb.seconds < 2e-3;
  }
  EXPECT_NEAR(failed, 0.2 * n, 0.08 * n);
  EXPECT_GT(faster, n / 4);  // candidates to find
}

TEST(SimulatedBackend, CompileAndRunTakeTheirTime) {
  test::TempDir dir;
  auto capture = capture::CaptureReader::open(write_capture(dir));
  SimulationOptions o;
  o.compile_s = 0.05;
  o.run_s = 0.1;
  o.spread = 0;
  o.failure_rate = 0;
  auto backend = make_backend("simulate", encode(o));
  backend->prepare(capture, 0, {});
  const auto start = std::chrono::steady_clock::now();
  const Compiled c = backend->compile(variant_with(1));
  const double compiled = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  backend->run(c, RunOptions{});
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(compiled, 0.05);
  EXPECT_GE(total, 0.15);
  EXPECT_DOUBLE_EQ(c.seconds, 0.05);
}

TEST(SimulatedBackend, SettingsOutOfRangeAreRefused) {
  EXPECT_THROW(make_backend("simulate", R"({"spread": 2})"), FormatError);
  EXPECT_THROW(make_backend("simulate", R"({"kernel_s": 0})"), FormatError);
  EXPECT_THROW(make_backend("simulate", "{"), FormatError);
  EXPECT_NO_THROW(make_backend("simulate", ""));
}

}  // namespace
}  // namespace r3::replay
