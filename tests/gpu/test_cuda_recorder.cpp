// The CUDA recorder (libr3record_cuda.so through `r3 record`) on an unmodified application built
// with plain nvcc and the static CUDA runtime (examples/cuda/heat.cu), then replayed by the CUDA
// backend as recorded and as a variant compiled from source. Needs a GPU.
#include <gtest/gtest.h>

#include <set>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "r3/capture.hpp"
#include "require_gpu.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace r3::replay {
namespace {

using test::contains;

#define R3_REQUIRE_GPU() R3_REQUIRE_GPU_FOR("the CUDA recorder")

// `r3 record OPTIONS -o OUT -- APPLICATION...`
test::ProcessResult record_app(const std::vector<std::string>& options, const std::string& out,
                               const std::vector<std::string>& application) {
  std::vector<std::string> argv = {R3_TEST_R3, "record", "-o", out};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), application.begin(), application.end());
  return test::run_process(argv, std::chrono::seconds(300));
}

test::ProcessResult record(const std::vector<std::string>& options, const std::string& out) {
  return record_app(options, out, {R3_TEST_CUDA_HEAT, "512", "4"});
}

test::ProcessResult replay(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {R3_TEST_R3, "replay"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run_process(argv, std::chrono::seconds(300));
}

std::string example_source(const std::string& file) {
  return std::string(R3_TEST_SOURCE_DIR) + "/examples/cuda/" + file;
}

const capture::Region* global_named(const std::vector<capture::Region>& table,
                                    const std::string& name) {
  for (const capture::Region& r : table)
    if (r.kind == capture::RegionKind::global && r.name == name) return &r;
  return nullptr;
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
    ASSERT_EQ(l.prologue.size(), 2u);
    for (const capture::Region& r : l.prologue)
      EXPECT_EQ(r.element_type, capture::ElementType::f32) << "from 'float const*' and 'float*'";
    ASSERT_EQ(l.epilogue.size(), 1u) << "only the output grid changes";
    EXPECT_TRUE(l.app_time_us && *l.app_time_us > 0);
  }
  EXPECT_EQ(k.params[0].type, "float const*");
  // Each region is named after the parameter that reaches it.
  std::set<std::string> names;
  for (const capture::Region& r : k.launches[0].prologue) names.insert(r.name);
  EXPECT_EQ(names, (std::set<std::string>{"arg0", "arg1"}));
  EXPECT_EQ(k.launches[0].epilogue[0].name, "arg1") << "the output grid";
  EXPECT_TRUE(k.images.contains("ptx")) << "nvcc kept the PTX in the fat binary";
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
  // JIT options replay the recorded PTX instead of the cubin.
  auto jit = replay({capture, "--flags", "-O3", "-n", "3"});
  EXPECT_EQ(jit.exit_code, 0) << jit.out << jit.err;
  EXPECT_EQ(test::count(jit.out, "verified  median"), 2) << jit.out;
}

// Threads that launch at once (examples/cuda/threads.cu): launches of several threads are
// recorded one at a time, each from its entry to its exit, while the others launch on, and
// every recorded launch replays verified.
TEST(CudaRecorder, LaunchesOfManyThreadsAreRecordedAndReplayVerified) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  const std::string capture = (dir / "threads.h5").string();
  auto rec = record_app({"-k", "scale|tick", "--launches", "3"}, capture,
                        {R3_TEST_CUDA_THREADS, "4", "64", "0.5"});
  ASSERT_EQ(rec.exit_code, 0) << rec.out << rec.err;
  EXPECT_TRUE(contains(rec.out, "threads 4, scale over 64 MiB")) << rec.out;
  auto reader = capture::CaptureReader::open(capture);
  std::map<std::string, std::size_t> launches;
  for (const capture::Kernel& k : reader.kernels()) launches[k.demangled_name] = k.launches.size();
  EXPECT_EQ(launches, (std::map<std::string, std::size_t>{
                          {"(anonymous namespace)::scale(float*, unsigned long, float)", 1},
                          {"(anonymous namespace)::tick(unsigned int*)", 3}}))
      << rec.err;
  int verified = 0;
  for (const capture::Kernel& k : reader.kernels()) {
    auto replayed = replay({capture, "-k", k.name, "-n", "3"});
    EXPECT_EQ(replayed.exit_code, 0) << replayed.out << replayed.err;
    verified += test::count(replayed.out, "verified  median");
  }
  EXPECT_EQ(verified, 4);
}

// The same application with the shared CUDA runtime, and a driver-API application that loads
// PTX text it compiled with NVRTC and sets a __constant__ through cuModuleGetGlobal.
TEST(CudaRecorder, SharedRuntimeAndDriverApiApplicationsAreRecordedAndReplayed) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  const std::string shared = (dir / "shared.h5").string();
  auto rec = record_app({"-k", "heat_step"}, shared, {R3_TEST_CUDA_HEAT_SHARED, "512", "4"});
  ASSERT_EQ(rec.exit_code, 0) << rec.out << rec.err;
  EXPECT_EQ(capture::CaptureReader::open(shared).kernel("heat_step").launches.size(), 1u);
  auto replayed = replay({shared, "-n", "3"});
  EXPECT_EQ(replayed.exit_code, 0) << replayed.out << replayed.err;
  EXPECT_EQ(test::count(replayed.out, "verified  median"), 1) << replayed.out;

  const std::string driver = (dir / "driver.h5").string();
  rec = record_app({"-k", "scaled_axpy", "--launches", "2"}, driver,
                   {R3_TEST_CUDA_DRIVER_API, "100000", "3"});
  ASSERT_EQ(rec.exit_code, 0) << rec.out << rec.err;
  auto reader = capture::CaptureReader::open(driver);
  const capture::Kernel& k = reader.kernel("scaled_axpy");
  ASSERT_TRUE(k.images.contains("ptx")) << "the PTX text the application loaded";
  const std::vector<std::byte> ptx = reader.read_content(k.images.at("ptx"));
  EXPECT_NE(
      std::string(reinterpret_cast<const char*>(ptx.data()), ptx.size()).find(".entry scaled_axpy"),
      std::string::npos);
  ASSERT_EQ(k.launches.size(), 2u) << "two values of a: two distinct launches";
  const capture::Region* scale = global_named(k.launches[0].globals, "scale");
  ASSERT_NE(scale, nullptr) << "the __constant__ of a module loaded from PTX";
  float value = 0;
  std::memcpy(&value, reader.read_content(scale->content).data(), sizeof value);
  EXPECT_EQ(value, 0.5f);
  // Managed memory is not recorded: the warning names the kernel whose launch uses it.
  auto managed = record_app({"-k", "scaled_axpy"}, (dir / "managed.h5").string(),
                            {R3_TEST_CUDA_DRIVER_API, "1000", "1", "managed"});
  EXPECT_EQ(managed.exit_code, 0) << managed.err;
  EXPECT_TRUE(contains(managed.err, "a launch of scaled_axpy uses managed memory")) << managed.err;
  EXPECT_TRUE(contains(managed.err, "allocated managed memory 1 time(s)")) << managed.err;
  for (const std::vector<std::string>& how :
       {std::vector<std::string>{}, std::vector<std::string>{"--flags", "-O3"}}) {
    std::vector<std::string> args = {driver, "-n", "3"};
    args.insert(args.end(), how.begin(), how.end());
    auto again = replay(args);
    EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
    EXPECT_EQ(test::count(again.out, "verified  median"), 2) << again.out;
  }
}

// Conjugate gradients: four kernels of integer and double data, each replayed verified, and the
// SpMV as a variant with another block size.
TEST(CudaRecorder, ConjugateGradientKernelsReplayVerified) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  const std::string capture = (dir / "cg.h5").string();
  auto rec = record_app({"-k", "csr_spmv|dot_partial|axpy|xpby", "--launches", "2"}, capture,
                        {R3_TEST_CUDA_CG, "128", "10"});
  ASSERT_EQ(rec.exit_code, 0) << rec.out << rec.err;
  EXPECT_TRUE(contains(rec.out, "10 iterations")) << rec.out;
  auto reader = capture::CaptureReader::open(capture);
  ASSERT_EQ(reader.kernels().size(), 4u) << rec.err;
  const capture::Kernel& spmv = reader.kernel("csr_spmv");
  ASSERT_EQ(spmv.params.size(), 6u);
  ASSERT_FALSE(spmv.launches.empty());
  std::map<capture::ElementType, int> types;
  for (const capture::Region& r : spmv.launches[0].prologue) ++types[r.element_type];
  EXPECT_EQ(types[capture::ElementType::i32], 2) << "row starts and columns";
  EXPECT_EQ(types[capture::ElementType::f64], 3) << "values, x and y (y from the stream pool)";
  for (const capture::Kernel& k : reader.kernels()) {
    auto replayed = replay({capture, "-k", k.name, "-n", "3"});
    EXPECT_EQ(replayed.exit_code, 0) << k.name << "\n" << replayed.out << replayed.err;
    EXPECT_EQ(test::count(replayed.out, "verified  median"), int(k.launches.size()))
        << k.name << "\n"
        << replayed.out;
  }
  auto variant = replay({capture, "-k", "csr_spmv", "--source", example_source("cg_kernels.cuh"),
                         "--entry", "csr_spmv", "--block", "128,1,1", "-n", "3"});
  EXPECT_EQ(variant.exit_code, 0) << variant.out << variant.err;
  EXPECT_EQ(test::count(variant.out, "verified  median"), int(spmv.launches.size())) << variant.out;
}

// Memory reached through a struct of pointers passed by value, a pointer table in device memory
// and a pointer table in a module global; __constant__ data and a global counter the kernel
// changes.
TEST(CudaRecorder, StructsPointerTablesAndModuleGlobalsAreRecordedAndReplayed) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  const std::string capture = (dir / "fields.h5").string();
  auto rec = record_app({"-k", "compute_flux|mix_species|decay"}, capture,
                        {R3_TEST_CUDA_FIELDS, "100000", "3"});
  ASSERT_EQ(rec.exit_code, 0) << rec.out << rec.err;
  EXPECT_TRUE(contains(rec.out, "300000 cells decayed")) << rec.out;
  auto reader = capture::CaptureReader::open(capture);
  ASSERT_EQ(reader.kernels().size(), 3u) << rec.err;

  const capture::Launch& flux = reader.kernel("compute_flux").launches.at(0);
  EXPECT_EQ(flux.prologue.size(), 3u) << "density, velocity and flux, through the struct";
  // Named by the member's offset in the struct passed by value.
  std::set<std::string> flux_names;
  for (const capture::Region& r : flux.prologue) flux_names.insert(r.name);
  EXPECT_EQ(flux_names, (std::set<std::string>{"arg0", "arg0+8", "arg0+16"}));
  ASSERT_EQ(flux.epilogue.size(), 1u) << "only the flux changes";
  const capture::Region* weights = global_named(flux.globals, "upwind_weights");
  ASSERT_NE(weights, nullptr) << "the __constant__ weights are a module global";
  EXPECT_EQ(weights->size, 3 * sizeof(float));
  const std::vector<std::byte> bytes = reader.read_content(weights->content);
  float w[3];
  std::memcpy(w, bytes.data(), sizeof w);
  EXPECT_EQ(w[0], 0.25f);
  EXPECT_EQ(w[1], 0.5f);

  const capture::Launch& mix = reader.kernel("mix_species").launches.at(0);
  EXPECT_EQ(mix.prologue.size(), 7u) << "the table, 4 species through it, weights, output";
  std::set<std::string> mix_names;
  for (const capture::Region& r : mix.prologue) mix_names.insert(r.name);
  EXPECT_TRUE(mix_names.contains("arg0") && mix_names.contains("*(arg0+8)") &&
              mix_names.contains("arg4"))
      << "the table, a species through it, the output";
  for (const capture::Launch* l : {&flux, &mix})
    for (const capture::Region& r : l->prologue) EXPECT_FALSE(r.name.empty()) << "unnamed region";

  const capture::Launch& decay = reader.kernel("decay").launches.at(0);
  EXPECT_EQ(decay.prologue.size(), 2u) << "the two tracers, through the global pointer table";
  std::set<std::string> decay_names;
  for (const capture::Region& r : decay.prologue) decay_names.insert(r.name);
  EXPECT_EQ(decay_names, (std::set<std::string>{"*(tracers)", "*(tracers+8)"}));
  ASSERT_NE(global_named(decay.globals, "tracers"), nullptr);
  EXPECT_NE(global_named(decay.epilogue, "decayed_cells"), nullptr)
      << "the counter the launch changed is in its epilogue";

  for (const char* kernel : {"compute_flux", "mix_species", "decay"}) {
    auto replayed = replay({capture, "-k", kernel, "-n", "3"});
    EXPECT_EQ(replayed.exit_code, 0) << kernel << "\n" << replayed.out << replayed.err;
    EXPECT_EQ(test::count(replayed.out, "verified  median"), 1) << kernel << replayed.out;
    auto variant = replay({capture, "-k", kernel, "--source", example_source("fields_kernels.cuh"),
                           "--entry", kernel, "--block", "128,1,1", "-n", "3"});
    EXPECT_EQ(variant.exit_code, 0) << kernel << "\n" << variant.out << variant.err;
    EXPECT_EQ(test::count(variant.out, "verified  median"), 1) << kernel << variant.out;
  }
}

// `mpirun -n 2 r3 record --ranks 1 -- app`: only rank 1 is recorded, into its own file.
TEST(CudaRecorder, UnderMpirunOnlyTheSelectedRankIsRecorded) {
  R3_REQUIRE_GPU();
  if (!std::filesystem::exists(R3_TEST_MPIEXEC))
    GTEST_SKIP() << "no " << R3_TEST_MPIEXEC << " on this machine";
  test::TempDir dir;
  const std::string out = (dir / "heat.h5").string();
  auto run = test::run_process(
      {R3_TEST_MPIEXEC, "-n", "2", "--oversubscribe", R3_TEST_R3, "record", "--ranks", "1", "-k",
       "heat_step", "-o", out, "--", R3_TEST_CUDA_HEAT, "256", "2"},
      std::chrono::seconds(300));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "heat.rank0.h5"));
  ASSERT_TRUE(std::filesystem::exists(dir / "heat.rank1.h5")) << run.err;
  EXPECT_EQ(capture::CaptureReader::open(dir / "heat.rank1.h5").info().rank, 1);
  EXPECT_TRUE(contains(run.err, "rank 0 is not among --ranks 1")) << run.err;
}

// Each example's tune.yaml runs a short tuning job on the capture the example records.
TEST(CudaRecorder, EachExamplesTuneYamlTunesItsRecording) {
  R3_REQUIRE_GPU();
  struct Example {
    std::string yaml, capture;
    std::vector<std::string> record_options, application;
  };
  const std::vector<Example> examples = {
      {"tune-heat.yaml",
       "heat.h5",
       {"-k", "heat_step", "--launches", "2"},
       {R3_TEST_CUDA_HEAT, "1024", "4"}},
      {"tune-cg.yaml", "cg.h5", {"-k", "csr_spmv"}, {R3_TEST_CUDA_CG, "256", "4"}},
      {"tune-fields.yaml",
       "fields.h5",
       {"-k", "compute_flux"},
       {R3_TEST_CUDA_FIELDS, "1000000", "2"}},
  };
  for (const Example& e : examples) {
    SCOPED_TRACE(e.yaml);
    test::TempDir dir;
    auto rec = record_app(e.record_options, (dir / e.capture).string(), e.application);
    ASSERT_EQ(rec.exit_code, 0) << rec.out << rec.err;
    // The example's tune.yaml beside its sources, with a small budget and this capture.
    std::ifstream in(example_source(e.yaml));
    std::ostringstream yaml;
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("capture:")) line = "capture: " + (dir / e.capture).string();
      if (line.find("source: ") != std::string::npos)
        line = line.substr(0, line.find("source: ")) +
               "source: " + example_source(line.substr(line.find("source: ") + 8));
      if (line.find("evaluations:") != std::string::npos) line = "  evaluations: 12";
      if (line.find("directory:") != std::string::npos)
        line = "  directory: " + (dir / "results").string();
      yaml << line << "\n";
    }
    const std::filesystem::path tune = dir / e.yaml;
    std::ofstream(tune) << yaml.str();
    auto job = test::run_process(
        {R3_TEST_MPIEXEC, "-n", "2", "--oversubscribe", R3_TEST_R3_MPI, tune.string()},
        std::chrono::seconds(600));
    EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
    int best = 0;  // results/<kernel>/best.yaml
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir / "results"))
      best += entry.path().filename() == "best.yaml";
    EXPECT_EQ(best, 1) << job.out << job.err;
  }
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

// A program that reads a row past its last array (as Rodinia's srad_v2 does) records as it runs
// alone, each time, and its capture replays verified: what the recorder maps or holds must not
// change what lies after the application's arrays.
TEST(CudaRecorder, AProgramThatReadsPastItsLastArrayRecordsAsItRunsAlone) {
  R3_REQUIRE_GPU();
  test::TempDir dir;
  auto alone = test::run_process({R3_TEST_APP_READS_PAST_END}, std::chrono::seconds(120));
  if (alone.exit_code != 0) GTEST_SKIP() << "the program faults even alone here: " << alone.out;
  for (int run = 0; run < 3; ++run) {
    const std::string capture = (dir / ("past" + std::to_string(run) + ".h5")).string();
    auto rec = record_app({"-k", "add_next_row"}, capture, {R3_TEST_APP_READS_PAST_END});
    ASSERT_EQ(rec.exit_code, 0) << "run " << run << ":\n" << rec.out << rec.err;
    EXPECT_TRUE(contains(rec.out, "sum 16777216")) << rec.out;
    if (run == 0) {
      auto replayed = replay({capture});
      EXPECT_EQ(replayed.exit_code, 0) << replayed.out << replayed.err;
    }
  }
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
