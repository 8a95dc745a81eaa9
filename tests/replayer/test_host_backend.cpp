// The host backend end to end on captures made here: recorded addresses chosen free (same-address
// replay) or deliberately occupied (relocation), variants right, wrong, and broken.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "r3/error.hpp"
#include "r3/replay/backend.hpp"
#include "r3/replay/compile_pool.hpp"
#include "recorded.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using namespace r3::capture;
using namespace r3::replay;
using r3::test::TempDir;

const std::uint64_t kPage = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));

const char* kStencil =
    R"(extern "C" void stencil2d(const float* in, float* out, int n, float alpha) {
  for (int y = 1; y < n - 1; ++y) {
    for (int x = 1; x < n - 1; ++x) {
      int i = y * n + x;
      out[i] = in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i]);
    }
  }
}
)";

void stencil_reference(const float* in, float* out, int n, float alpha) {
  for (int y = 1; y < n - 1; ++y) {
    for (int x = 1; x < n - 1; ++x) {
      int i = y * n + x;
      out[i] = in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i]);
    }
  }
}

std::uint64_t free_range(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(p, MAP_FAILED);
  munmap(p, bytes);
  return reinterpret_cast<std::uint64_t>(p);
}

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

template <class T>
void append(std::vector<std::byte>& args, const T& value) {
  std::size_t offset = (args.size() + alignof(T) - 1) / alignof(T) * alignof(T);
  args.resize(offset + sizeof(T));
  std::memcpy(args.data() + offset, &value, sizeof(T));
}

// A capture of `steps` ping-pong launches of the stencil on an n x n grid, its two buffers
// recorded at `in_address` and `out_address`.
fs::path stencil_capture(const TempDir& dir, std::uint64_t in_address, std::uint64_t out_address,
                         int n = 32, int steps = 2, bool with_source = true,
                         ElementType out_type = ElementType::f32) {
  fs::path path = dir / "stencil.h5";
  CaptureInfo info;
  info.device.backend = "host";
  CaptureWriter writer = CaptureWriter::create(path, info);
  Kernel kernel;
  kernel.name = "stencil2d";
  if (with_source) {
    kernel.images["source"] =
        writer.put_content(std::as_bytes(std::span(std::string_view(kStencil))));
  }
  kernel.params = {{0, 8, true, "const float*"},
                   {8, 8, true, "float*"},
                   {16, 4, false, "int"},
                   {20, 4, false, "float"}};
  std::size_t id = writer.add_kernel(kernel);
  std::vector<float> a(static_cast<std::size_t>(n) * n), b(a.size(), 0.0f);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 37) % 101);
  std::uint64_t addresses[2] = {in_address, out_address};
  std::vector<float>* buffers[2] = {&a, &b};
  const std::uint64_t bytes = a.size() * sizeof(float);
  for (int step = 0; step < steps; ++step) {
    std::vector<float>& in = *buffers[step % 2];
    std::vector<float>& out = *buffers[(step + 1) % 2];
    std::uint64_t in_at = addresses[step % 2], out_at = addresses[(step + 1) % 2];
    Launch launch;
    launch.sequence = static_cast<std::uint64_t>(step);
    append(launch.args, in_at);
    append(launch.args, out_at);
    append(launch.args, n);
    append(launch.args, 0.2f);
    launch.prologue = {{"in", RegionKind::allocation, in_at, bytes, ElementType::f32,
                        writer.put_content(bytes_of(in))},
                       {"out", RegionKind::allocation, out_at, bytes, out_type,
                        writer.put_content(bytes_of(out))}};
    stencil_reference(in.data(), out.data(), n, 0.2f);
    launch.epilogue = {{"out", RegionKind::allocation, out_at, bytes, out_type,
                        writer.put_content(bytes_of(out))}};
    writer.add_launch(id, launch);
  }
  writer.close();
  return path;
}

struct Replay {
  CaptureReader capture;
  std::unique_ptr<Backend> backend;
};

Replay prepared(const fs::path& path) {
  Replay replay{CaptureReader::open(path), make_backend("host")};
  replay.backend->prepare(replay.capture, 0, {});
  return replay;
}

Variant variant_from(std::string source) {
  Variant v;
  v.source_name = "stencil.cpp";
  v.source_text = std::move(source);
  return v;
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(HostBackend, ReplaysTheRecordedSourceAtTheRecordedAddresses) {
  TempDir dir;
  const std::uint64_t base = free_range(64 * kPage);
  Replay replay = prepared(stencil_capture(dir, base, base + 16 * kPage));
  EXPECT_EQ(replay.backend->address_mode(), AddressMode::same_address);
  Compiled compiled = replay.backend->compile(Variant{});
  ASSERT_TRUE(compiled.ok) << compiled.diagnostics;
  RunResult result = replay.backend->run(compiled, RunOptions{});
  ASSERT_EQ(result.outcome, Outcome::ok) << result.message;
  ASSERT_EQ(result.launches.size(), 2u);
  for (const LaunchResult& launch : result.launches) {
    EXPECT_TRUE(launch.verified);
    EXPECT_EQ(launch.time.samples.size(), 10u);
    EXPECT_GT(launch.time.median, 0.0);
    EXPECT_LE(launch.time.min, launch.time.median);
    ASSERT_EQ(launch.regions.size(), 2u);
    EXPECT_FALSE(launch.regions[0].expected_to_change);  // in
    EXPECT_TRUE(launch.regions[1].expected_to_change);   // out
  }
  EXPECT_GT(result.seconds, 0.0);
  EXPECT_TRUE(replay.backend->compile(Variant{}).from_cache);
}

// A capture whose regions do not fit is refused before anything is allocated, naming the file,
// the kernel, the launch and the region (not a bad_alloc that names nothing).
TEST(HostBackend, RegionsThatDoNotFitInMemoryAreRefusedByName) {
  TempDir dir;
  const std::uint64_t base = free_range(1 << 17);
  const fs::path path = stencil_capture(dir, base, base + (1 << 16), 32, 2);
  CaptureReader capture = CaptureReader::open(path);
  const Kernel& kernel = capture.kernels().at(0);
  const std::uint64_t region = 32 * 32 * sizeof(float);
  try {
    r3::replay::check_fits_in_memory(capture, kernel, {0, 1}, region - 1, "host memory", 1);
    FAIL() << "a region larger than the memory was accepted";
  } catch (const r3::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path.string()), std::string::npos) << what;
    EXPECT_NE(what.find("stencil2d"), std::string::npos) << what;
    EXPECT_NE(what.find("launch 0, region 'in' holds 4096 bytes"), std::string::npos) << what;
  }
  // Each region fits alone, not all of them with their copies.
  try {
    r3::replay::check_fits_in_memory(capture, kernel, {0, 1}, 3 * region, "host memory", 2);
    FAIL() << "regions larger than the memory together were accepted";
  } catch (const r3::Error& e) {
    EXPECT_NE(std::string(e.what()).find("the replayed launches need"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(r3::replay::check_fits_in_memory(capture, kernel, {0, 1}, 4 * region, "host memory", 2));
  EXPECT_GT(r3::replay::available_host_memory(), 0u);
}

TEST(HostBackend, AnOffByOneVariantIsCaught) {
  TempDir dir;
  const std::uint64_t base = free_range(64 * kPage);
  Replay replay = prepared(stencil_capture(dir, base, base + 16 * kPage));
  Compiled compiled = replay.backend->compile(
      variant_from(replace(kStencil, "int i = y * n + x;", "int i = y * n + x + 1;")));
  ASSERT_TRUE(compiled.ok) << compiled.diagnostics;
  RunResult result = replay.backend->run(compiled, RunOptions{});
  EXPECT_EQ(result.outcome, Outcome::wrong_result);
  EXPECT_NE(result.message.find("launch 0: region 'out' differs from the recorded result"),
            std::string::npos)
      << result.message;
  const RegionCheck& out = result.launches.at(0).regions.at(1);
  EXPECT_FALSE(out.passed);
  EXPECT_EQ(out.first_bad_index, 32 + 1);  // the first interior cell of the 32 x 32 grid
}

TEST(HostBackend, AVariantThatWritesOutsideItsOutputIsCaught) {
  TempDir dir;
  const std::uint64_t base = free_range(64 * kPage);
  Replay replay = prepared(stencil_capture(dir, base, base + 16 * kPage));
  std::string writes_input = replace(kStencil, "const float* in,", "float* in,");
  writes_input = replace(writes_input, "    }\n  }\n}", "    }\n  }\n  in[0] = 0.5f;\n}");
  RunResult result =
      replay.backend->run(replay.backend->compile(variant_from(writes_input)), RunOptions{});
  EXPECT_EQ(result.outcome, Outcome::wrong_result);
  EXPECT_NE(result.message.find("region 'in' was modified but must stay untouched"),
            std::string::npos)
      << result.message;
}

// n = 30: each buffer is 3600 bytes, so the page it ends in has unrecorded bytes after it.
TEST(HostBackend, AWritePastTheEndOfAnAllocationIsCaughtAndCleanedUp) {
  TempDir dir;
  const std::uint64_t base = free_range(64 * kPage);
  Replay replay = prepared(stencil_capture(dir, base, base + 16 * kPage, 30, 1));
  std::string past_end =
      replace(kStencil, "    }\n  }\n}", "    }\n  }\n  out[n * n + 5] = 1.0f;\n}");
  RunResult result =
      replay.backend->run(replay.backend->compile(variant_from(past_end)), RunOptions{});
  EXPECT_EQ(result.outcome, Outcome::wrong_result);
  // 1.0f is 00 00 80 3f: two bytes change, the first 22 bytes past the end.
  EXPECT_NE(result.message.find("out-of-bounds write: 2 bytes changed in memory that no recorded "
                                "region covers, the first at byte 22 past the end of region "
                                "'out'"),
            std::string::npos)
      << result.message;
  ASSERT_FALSE(result.launches.empty());
  EXPECT_TRUE(result.launches[0].regions.back().out_of_bounds);

  // The stray bytes were cleared: the original runs clean after it.
  RunResult original = replay.backend->run(replay.backend->compile(Variant{}), RunOptions{});
  EXPECT_EQ(original.outcome, Outcome::ok) << original.message;
}

// Each define makes another variant of the same (correct) kernel.
Variant numbered_variant(int number) {
  Variant v = variant_from(kStencil);
  v.defines["VARIANT"] = std::to_string(number);
  return v;
}

TEST(CompilePool, CompilesAheadOnItsThreadsAndHandsTheResultsOver) {
  TempDir dir;
  const std::uint64_t base = free_range(64 * kPage);
  Replay replay = prepared(stencil_capture(dir, base, base + 16 * kPage));
  CompilePool pool(*replay.backend, 3);
  EXPECT_EQ(pool.threads(), 3u);
  for (int i = 0; i < 6; ++i) pool.submit(numbered_variant(i));
  pool.submit(numbered_variant(0));  // already queued: not compiled twice
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (pool.compiled_ahead() < 6 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(pool.compiled_ahead(), 6u);
  for (int i = 0; i < 6; ++i) {
    Compiled compiled = pool.get(numbered_variant(i));
    ASSERT_TRUE(compiled.ok) << compiled.diagnostics;
    EXPECT_FALSE(compiled.from_cache) << "compiled by the pool, not found in the cache later";
    RunResult result = replay.backend->run(compiled, RunOptions{});
    EXPECT_EQ(result.outcome, Outcome::ok) << result.message;
  }
  // Never submitted: compiled on this thread.
  Compiled late = pool.get(numbered_variant(7));
  EXPECT_TRUE(late.ok) << late.diagnostics;
  EXPECT_EQ(pool.compiled_ahead(), 6u);

  Variant broken = variant_from("extern \"C\" void stencil2d( {");
  pool.submit(broken);
  Compiled failed = pool.get(broken);
  EXPECT_FALSE(failed.ok);
  EXPECT_NE(failed.diagnostics.find("error"), std::string::npos) << failed.diagnostics;
}

TEST(CompilePool, ACandidateStillQueuedIsCompiledByItsCallerNotWaitedFor) {
  TempDir dir;
  const std::uint64_t base = free_range(64 * kPage);
  Replay replay = prepared(stencil_capture(dir, base, base + 16 * kPage));
  CompilePool pool(*replay.backend, 1);
  for (int i = 0; i < 3; ++i) pool.submit(numbered_variant(i));
  // The only thread is busy with the first one; the third is still queued.
  Compiled third = pool.get(numbered_variant(2));
  EXPECT_TRUE(third.ok) << third.diagnostics;
  // The thread goes on with the second, and finds the third gone from the queue.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (pool.compiled_ahead() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(pool.compiled_ahead(), 2u) << "the third was taken out of the queue";
  EXPECT_TRUE(pool.get(numbered_variant(0)).ok);
  EXPECT_TRUE(pool.get(numbered_variant(1)).ok);
  EXPECT_EQ(pool.compiled_ahead(), 2u);
}

TEST(CompilePool, WithoutThreadsEverythingCompilesOnTheCallingThread) {
  TempDir dir;
  const std::uint64_t base = free_range(64 * kPage);
  Replay replay = prepared(stencil_capture(dir, base, base + 16 * kPage));
  CompilePool pool(*replay.backend, 0);
  pool.submit(numbered_variant(1));
  Compiled compiled = pool.get(numbered_variant(1));
  EXPECT_TRUE(compiled.ok) << compiled.diagnostics;
  EXPECT_EQ(pool.compiled_ahead(), 0u);
}

TEST(HostBackend, ToleranceComesFromTheOptions) {
  TempDir dir;
  const std::uint64_t base = free_range(64 * kPage);
  Replay replay = prepared(stencil_capture(dir, base, base + 16 * kPage));
  // The same formula, reassociated: results differ in the last bits of some elements.
  Compiled compiled = replay.backend->compile(variant_from(replace(
      kStencil,
      "out[i] = in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i]);",
      "out[i] = (1.0f - 4.0f * alpha) * in[i] + alpha * ((in[i - 1] + in[i + 1]) + (in[i - n] + "
      "in[i + n]));")));
  RunOptions loose;
  EXPECT_EQ(replay.backend->run(compiled, loose).outcome, Outcome::ok);
  RunOptions exact;
  exact.verify.regions["out"] = r3::replay::Tolerance::exact();
  RunResult strict = replay.backend->run(compiled, exact);
  EXPECT_EQ(strict.outcome, Outcome::wrong_result) << "reassociation changed no bit";
}

// A region the capture could not type (a struct the recorder knows only by name) is compared
// bitwise, unless the options type it (the job does, from the kernel's source).
TEST(HostBackend, RegionTypesFromTheOptionsApplyWhereTheCaptureHasNone) {
  TempDir dir;
  const std::uint64_t base = free_range(64 * kPage);
  Replay replay = prepared(
      stencil_capture(dir, base, base + 16 * kPage, 32, 2, true, ElementType::unknown));
  Compiled compiled = replay.backend->compile(variant_from(replace(
      kStencil,
      "out[i] = in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i]);",
      "out[i] = (1.0f - 4.0f * alpha) * in[i] + alpha * ((in[i - 1] + in[i + 1]) + (in[i - n] + "
      "in[i + n]));")));
  RunOptions untyped;
  EXPECT_EQ(replay.backend->run(compiled, untyped).outcome, Outcome::wrong_result)
      << "reassociation changed no bit, or unknown regions are not compared bitwise";
  RunOptions typed;
  typed.verify.region_types["out"] = ElementType::f32;
  RunResult result = replay.backend->run(compiled, typed);
  EXPECT_EQ(result.outcome, Outcome::ok) << result.message;
  ASSERT_FALSE(result.launches.empty());
  bool seen = false;
  for (const RegionCheck& check : result.launches.front().regions)
    if (check.name == "out" && check.expected_to_change) {
      EXPECT_EQ(check.type, ElementType::f32);
      seen = true;
    }
  EXPECT_TRUE(seen);
  // A recorded type is not overridden.
  TempDir other;
  Replay recorded = prepared(stencil_capture(other, base + 32 * kPage, base + 48 * kPage));
  Compiled again = recorded.backend->compile(variant_from(replace(
      kStencil,
      "out[i] = in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i]);",
      "out[i] = (1.0f - 4.0f * alpha) * in[i] + alpha * ((in[i - 1] + in[i + 1]) + (in[i - n] + "
      "in[i + n]));")));
  RunOptions wrong_type;
  wrong_type.verify.region_types["out"] = ElementType::i32;
  EXPECT_EQ(recorded.backend->run(again, wrong_type).outcome, Outcome::ok);
}

// A recorded launch that changed nothing (every delta 0, as in Rodinia's backprop where the
// hidden units saturate): a candidate that does a sixteenth of the work matches the recording,
// and fails on the second input, where the application's code (the recorded source) changes
// every weight. The same formula reassociated still passes there, within tolerance.
const char* kAdjust = R"(extern "C" void adjust(const float* delta, float* w, float* oldw, int n) {
  for (int i = 0; i < n; ++i) {
    float change = 0.3f * delta[i] + 0.3f * oldw[i];
    w[i] += change;
    oldw[i] = change;
  }
}
)";

TEST(HostBackend, SkippedWorkThatTheRecordingCannotShowFailsOnTheSecondInput) {
  TempDir dir;
  const std::uint64_t base = free_range(64 * kPage);
  const int n = 4096;
  const std::uint64_t bytes = n * sizeof(float);
  fs::path path = dir / "adjust.h5";
  {
    CaptureInfo info;
    info.device.backend = "host";
    CaptureWriter writer = CaptureWriter::create(path, info);
    Kernel kernel;
    kernel.name = "adjust";
    kernel.images["source"] = writer.put_content(std::as_bytes(std::span(std::string_view(kAdjust))));
    kernel.params = {{0, 8, true, "const float*"}, {8, 8, true, "float*"},
                     {16, 8, true, "float*"}, {24, 4, false, "int"}};
    std::size_t id = writer.add_kernel(kernel);
    std::vector<float> zeros(n, 0.0f), w(n);
    for (int i = 0; i < n; ++i) w[i] = 0.5f + 0.001f * float(i % 97);
    const std::uint64_t at[3] = {base, base + 8 * kPage, base + 16 * kPage};
    Launch launch;
    for (std::uint64_t a : at) append(launch.args, a);
    append(launch.args, n);
    launch.prologue = {
        {"delta", RegionKind::allocation, at[0], bytes, ElementType::f32, writer.put_content(bytes_of(zeros))},
        {"w", RegionKind::allocation, at[1], bytes, ElementType::f32, writer.put_content(bytes_of(w))},
        {"oldw", RegionKind::allocation, at[2], bytes, ElementType::f32, writer.put_content(bytes_of(zeros))}};
    writer.add_launch(id, launch);  // no epilogue: the launch changed nothing
    writer.close();
  }
  Replay replay = prepared(path);
  auto variant = [](const std::string& body) {
    Variant v = variant_from(replace(kAdjust, "for (int i = 0; i < n; ++i) {", body));
    v.entry = "adjust";
    return v;
  };
  EXPECT_EQ(replay.backend->run(replay.backend->compile(Variant{}), RunOptions{}).outcome,
            Outcome::ok) << "the application's own code";
  RunResult lazy = replay.backend->run(
      replay.backend->compile(variant("for (int i = 0; i < n / 16; ++i) {")), RunOptions{});
  EXPECT_EQ(lazy.outcome, Outcome::wrong_result) << "a sixteenth of the work passed";
  EXPECT_NE(lazy.message.find("on a second input"), std::string::npos) << lazy.message;
  EXPECT_NE(lazy.message.find("region 'w' differs from what the application's code left there"),
            std::string::npos) << lazy.message;
  Variant reassociated = variant_from(
      replace(kAdjust, "0.3f * delta[i] + 0.3f * oldw[i]", "0.3f * (oldw[i] + delta[i])"));
  reassociated.entry = "adjust";
  RunResult same = replay.backend->run(replay.backend->compile(reassociated), RunOptions{});
  EXPECT_EQ(same.outcome, Outcome::ok) << same.message;
}

TEST(HostBackend, CompileErrorsAndBadPipelinesAreResultsNotExceptions) {
  TempDir dir;
  const std::uint64_t base = free_range(64 * kPage);
  Replay replay = prepared(stencil_capture(dir, base, base + 16 * kPage));
  Compiled broken =
      replay.backend->compile(variant_from(replace(kStencil, "4.0f * in[i]", "4.0f * in[i")));
  EXPECT_FALSE(broken.ok);
  EXPECT_NE(broken.diagnostics.find("stencil.cpp:5:"), std::string::npos) << broken.diagnostics;
  RunResult result = replay.backend->run(broken, RunOptions{});
  EXPECT_EQ(result.outcome, Outcome::compile_error);

  Variant bad_pipeline;
  bad_pipeline.passes = "function(loop-unroll,not-a-pass)";
  Compiled bad = replay.backend->compile(bad_pipeline);
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.diagnostics.find("invalid pass pipeline"), std::string::npos) << bad.diagnostics;
}

TEST(HostBackend, ACaptureWithoutSourceNeedsAVariantSource) {
  TempDir dir;
  const std::uint64_t base = free_range(64 * kPage);
  Replay replay =
      prepared(stencil_capture(dir, base, base + 16 * kPage, 32, 1, /*with_source=*/false));
  Compiled compiled = replay.backend->compile(Variant{});
  EXPECT_FALSE(compiled.ok);
  EXPECT_NE(compiled.diagnostics.find("holds no source for kernel 'stencil2d'"), std::string::npos);
  EXPECT_TRUE(replay.backend->compile(variant_from(kStencil)).ok);
}

TEST(HostBackend, RefusesCapturesOfOtherBackends) {
  TempDir dir;
  CaptureInfo info;
  info.device.backend = "cuda";
  { CaptureWriter writer = CaptureWriter::create(dir / "gpu.h5", info); }
  CaptureReader capture = CaptureReader::open(dir / "gpu.h5");
  EXPECT_THROW(make_backend("host")->prepare(capture, 0, {}), r3::Error);
  EXPECT_THROW(make_backend("opencl"), r3::Error);
}

// The recorded code of a one-launch capture, replayed with some of its regions placed elsewhere:
// verified, every region as the recording has it.
void expect_relocated_and_verified(const fs::path& capture) {
  Replay replay = prepared(capture);
  EXPECT_EQ(replay.backend->address_mode(), AddressMode::relocated);
  EXPECT_NE(replay.backend->placement().find("moved"), std::string::npos)
      << replay.backend->placement();
  RunResult result = replay.backend->run(replay.backend->compile(Variant{}), RunOptions{});
  EXPECT_EQ(result.outcome, Outcome::ok) << result.message;
  ASSERT_EQ(result.launches.size(), 1u);
  EXPECT_TRUE(result.launches[0].verified);
  for (const RegionCheck& check : result.launches[0].regions)
    EXPECT_TRUE(check.passed) << check.name;
}

// A region of an allocation recorded at `at` holding `data`, put into the capture by `writer`.
template <class T>
Region allocation_region(CaptureWriter& writer, const char* name, std::uint64_t at,
                         const std::vector<T>& data, ElementType type) {
  return Region{name, RegionKind::allocation,
                at,   data.size() * sizeof(T),
                type, writer.put_content(bytes_of(data))};
}

// A host capture at `path` of one kernel (its source and parameters) and one launch, whose
// arguments and regions `fill` gives.
void write_one_launch_capture(const fs::path& path, const char* name, const char* source,
                              std::vector<Param> params,
                              const std::function<void(CaptureWriter&, Launch&)>& fill) {
  CaptureInfo info;
  info.device.backend = "host";
  CaptureWriter writer = CaptureWriter::create(path, info);
  Kernel kernel;
  kernel.name = name;
  kernel.images["source"] = writer.put_content(std::as_bytes(std::span(std::string_view(source))));
  kernel.params = std::move(params);
  std::size_t id = writer.add_kernel(kernel);
  Launch launch;
  fill(writer, launch);
  writer.add_launch(id, launch);
}

// The particle push of examples/particles: a struct of pointers by value and a table of
// pointers in memory; relocating it needs both rewritten.
const char* kParticles = R"(struct Particles {
  float* x; float* v; const float* const* field; int count;
};
extern "C" void push(Particles p, float dt) {
  for (int i = 0; i < p.count; ++i) {
    p.v[i] += dt * p.field[0][i] + p.field[1][i];
    p.x[i] += dt * p.v[i];
  }
}
)";

TEST(HostBackend, RelocatesWhenTheRecordedAddressesAreTaken) {
  TempDir dir;
  const int count = 1000;
  const std::uint64_t base = free_range(16 * kPage);
  const std::uint64_t x_at = base, v_at = base + kPage, f0_at = base + 2 * kPage,
                      f1_at = base + 3 * kPage, table_at = base + 4 * kPage;
  std::vector<float> x(count), v(count), f0(count), f1(count);
  for (int i = 0; i < count; ++i) {
    x[i] = static_cast<float>(i);
    v[i] = 1.0f;
    f0[i] = 0.5f;
    f1[i] = 0.25f * static_cast<float>(i % 7);
  }
  std::vector<std::uint64_t> table = {f0_at, f1_at};
  write_one_launch_capture(
      dir / "p.h5", "push", kParticles, {{0, 32, false, ""}, {32, 4, false, "float"}},
      [&](CaptureWriter& writer, Launch& launch) {
        append(launch.args, x_at);
        append(launch.args, v_at);
        append(launch.args, table_at);
        append(launch.args, count);
        launch.args.resize(32);
        append(launch.args, 0.1f);
        launch.prologue = {allocation_region(writer, "x", x_at, x, ElementType::f32),
                           allocation_region(writer, "v", v_at, v, ElementType::f32),
                           allocation_region(writer, "f0", f0_at, f0, ElementType::f32),
                           allocation_region(writer, "f1", f1_at, f1, ElementType::f32),
                           allocation_region(writer, "field", table_at, table, ElementType::u64)};
        for (int i = 0; i < count; ++i) {
          v[i] += 0.1f * f0[i] + f1[i];
          x[i] += 0.1f * v[i];
        }
        launch.epilogue = {allocation_region(writer, "x", x_at, x, ElementType::f32),
                           allocation_region(writer, "v", v_at, v, ElementType::f32)};
      });
  // Something else now lives where the table and the first field were recorded.
  void* occupant = mmap(reinterpret_cast<void*>(f0_at), 3 * kPage, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_EQ(reinterpret_cast<std::uint64_t>(occupant), f0_at);
  // Untouched: the pointer table, as rewritten, is still what the kernel left.
  expect_relocated_and_verified(dir / "p.h5");
  munmap(occupant, 3 * kPage);
}

// A CSR-like gather whose int indices, two by two, read as an address in a relocated mapping:
// 2048 next to (A >> 32) is A + 2048, for A the recorded address of another region, which
// starts a 4 GiB block and covers 64 bytes of its page. Rewriting that "pointer" made the
// indices garbage (on a GPU, CUDA_ERROR_ILLEGAL_ADDRESS in about one CG recording in ten); only
// words pointing into a recorded region itself are rewritten now.
const char* kGather = R"(extern "C" void gather(const int* index, const float* in, float* out,
                                                 int count) {
  for (int i = 0; i < count; ++i) out[i] = in[index[i]];
}
)";

// A page at an address that starts a 4 GiB block, mapped so that a replay cannot place a region
// recorded there; 0 when none is free.
std::uint64_t occupy_4gib_aligned_page() {
  const std::uint64_t block = std::uint64_t{1} << 32;
  const std::uint64_t start = free_range(kPage) / block * block;
  for (std::uint64_t k = 1; k < 64 && k * block < start; ++k) {
    void* want = reinterpret_cast<void*>(start - k * block);
    void* got = mmap(want, kPage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == want) return reinterpret_cast<std::uint64_t>(got);
    if (got != MAP_FAILED) munmap(got, kPage);
  }
  return 0;
}

TEST(HostBackend, IndicesThatReadAsAnAddressNearARelocatedRegionStayIndices) {
  TempDir dir;
  const std::uint64_t table_at = occupy_4gib_aligned_page();
  ASSERT_NE(table_at, 0u) << "no free 4 GiB-aligned page";
  const int n = 40000, count = 1000;  // n above any (address >> 32) of user space
  ASSERT_LT(table_at >> 32, std::uint64_t(n));
  const std::uint64_t base = free_range(64 * kPage);
  const std::uint64_t index_at = base, in_at = base + 2 * kPage, out_at = base + 48 * kPage;
  std::vector<int> index(count);
  for (int i = 0; i < count; ++i) index[i] = (i * 7919) % n;
  index[0] = 2048, index[1] = static_cast<int>(table_at >> 32);
  std::uint64_t word;
  std::memcpy(&word, index.data(), 8);
  ASSERT_EQ(word, table_at + 2048);
  std::vector<float> in(n), out(count, 0.0f), table(16, 0.0f);
  for (int i = 0; i < n; ++i) in[i] = 0.5f * static_cast<float>(i % 97);
  write_one_launch_capture(
      dir / "g.h5", "gather", kGather,
      {{0, 8, true, "const int*"},
       {8, 8, true, "const float*"},
       {16, 8, true, "float*"},
       {24, 4, false, "int"}},
      [&](CaptureWriter& writer, Launch& launch) {
        append(launch.args, index_at);
        append(launch.args, in_at);
        append(launch.args, out_at);
        append(launch.args, count);
        launch.prologue = {
            allocation_region(writer, "index", index_at, index, ElementType::i32),
            allocation_region(writer, "in", in_at, in, ElementType::f32),
            allocation_region(writer, "out", out_at, out, ElementType::f32),
            allocation_region(writer, "table", table_at, table, ElementType::unknown)};
        for (int i = 0; i < count; ++i) out[i] = in[index[i]];
        launch.epilogue = {allocation_region(writer, "out", out_at, out, ElementType::f32)};
      });
  expect_relocated_and_verified(dir / "g.h5");
  munmap(reinterpret_cast<void*>(table_at), kPage);
}

}  // namespace
