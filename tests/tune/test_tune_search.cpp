// The search's split of each generation among kernels and levels: every kernel and every level
// that can propose gets its share over the run, whatever the batch size (the rounding is carried
// across generations); the originals come first.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <map>
#include <random>
#include <set>

#include "plan.hpp"
#include "r3/capture.hpp"
#include "r3/config/tune_config.hpp"
#include "r3/error.hpp"
#include "r3/evolve/llm_client.hpp"
#include "r3/evolve/mutators.hpp"
#include "search.hpp"
#include "support/temp_dir.hpp"

namespace r3::tune {
namespace {

// A CUDA capture of `kernels` kernels, each with a cubin and PTX image and one launch.
void write_cuda_capture(const std::filesystem::path& path, int kernels) {
  capture::CaptureInfo info;
  info.device.backend = "cuda";
  info.device.architecture = "sm_90";
  auto writer = capture::CaptureWriter::create(path, info);
  std::vector<std::byte> code(64, std::byte{1});
  Hash128 cubin = writer.put_content(code);
  code[0] = std::byte{2};
  Hash128 ptx = writer.put_content(code);
  for (int k = 0; k < kernels; ++k) {
    capture::Kernel kernel;
    kernel.name = "kernel" + std::to_string(k);
    kernel.images = {{"cubin", cubin}, {"ptx", ptx}};
    std::size_t id = writer.add_kernel(kernel);
    capture::Launch launch;
    launch.grid = {64, 1, 1};
    launch.block = {128, 1, 1};
    writer.add_launch(id, launch);
  }
  writer.close();
}

// A candidate's plan is typed in the job and text only in the run database: what an earlier
// version wrote reads back as the same plan and is written again byte for byte (a resumed run
// compares them), and text it did not write is a FormatError.
TEST(TunePlan, ReadsAndWritesTheRunDatabasesTextUnchanged) {
  for (const std::string text :
       {R"({"levels":{"compiler":[[2],[0],[]],"launch":[[3],[1]]},"searched":"launch"})",
        R"({"levels":{},"recorded":true})", R"({"levels":{"parameters":[[1]]}})"}) {
    SCOPED_TRACE(text);
    const Plan plan = Plan::decode(text);
    EXPECT_EQ(plan.encode(), text);
  }
  const Plan searched = Plan::decode(
      R"({"levels":{"compiler":[[2],[0],[]],"launch":[[3],[1]]},"searched":"launch"})");
  EXPECT_FALSE(searched.recorded);
  ASSERT_EQ(searched.searched, Level::launch);
  EXPECT_EQ(searched.levels.at(Level::launch), (bo::Configuration{{{3}, {1}}}));
  EXPECT_EQ(searched.levels.at(Level::compiler), (bo::Configuration{{{2}, {0}, {}}}));
  for (const char* bad :
       {"", "[]", R"({"levels":{"blocks":[[1]]}})", R"({"levels":{},"searched":"launch"})",
        R"({"levels":{"launch":[[1]]},"searched":"shape"})"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(Plan::decode(bad), FormatError);
  }
}

TEST(TuneSearch, FairSharesCarryTheRoundingAcrossCalls) {
  // Three equal slots, one candidate at a time: each gets every third, not the first always.
  std::vector<double> received;
  std::vector<std::size_t> total(3, 0);
  for (int call = 0; call < 30; ++call) {
    std::vector<std::size_t> got = fair_shares(1, {1, 1, 1}, received);
    for (std::size_t i = 0; i < 3; ++i) total[i] += got[i];
  }
  EXPECT_EQ(total, (std::vector<std::size_t>{10, 10, 10}));
  // Weights 0.5/0.25/0.25 in batches of 3: 2:1:1 over the run.
  received.clear();
  total.assign(3, 0);
  for (int call = 0; call < 40; ++call) {
    std::vector<std::size_t> got = fair_shares(3, {0.5, 0.25, 0.25}, received);
    for (std::size_t i = 0; i < 3; ++i) total[i] += got[i];
  }
  EXPECT_EQ(total, (std::vector<std::size_t>{60, 30, 30}));
  // A slot of weight 0 gets nothing, and nothing is lost.
  received.clear();
  std::vector<std::size_t> got = fair_shares(5, {0, 1, 0}, received);
  EXPECT_EQ(got, (std::vector<std::size_t>{0, 5, 0}));
  EXPECT_EQ(fair_shares(4, {0, 0}, received), (std::vector<std::size_t>{0, 0}));
}

// Kernel k of write_cuda_capture() as tune.yaml names it, with a cubin and PTX recorded.
KernelTarget recorded_target(std::size_t k) {
  KernelTarget t;
  t.capture_index = k;
  t.name = "kernel" + std::to_string(k);
  t.original_block = capture::Dim3{128, 1, 1};
  t.has_recorded_cubin = t.has_recorded_ptx = true;
  t.base.compiler = replay::Compiler::nvrtc;
  return t;
}

// Kernel k's source with a tunable: the nvrtc path, and a parameter level to search.
void give_tunable_source(KernelTarget& t, std::size_t k) {
  t.source = "R3_TUNABLE(TILE, 4, 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)\n__global__ void kernel" +
             std::to_string(k) + "(float* x) { x[threadIdx.x] *= TILE; }\n";
  t.source_name = "k.cu";
}

struct Split {
  std::map<std::size_t, std::size_t> per_kernel;                         // after the originals
  std::map<std::pair<std::size_t, std::string>, std::size_t> per_level;  // (kernel, level)
  std::size_t originals = 0;
  std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> blocks;  // launch level's
};

// Runs the search for `generations` generations of `batch` candidates on `kernels` kernels,
// observing every candidate as verified with a made-up time.
Split run_search(int kernels, std::size_t batch, int generations, bool with_parameters,
                 const std::function<void(KernelTarget&)>& adjust = {}) {
  test::TempDir dir;
  write_cuda_capture(dir / "c.h5", kernels);
  std::string yaml = "capture: c.h5\nbackend: cuda\nkernels: [";
  for (int k = 0; k < kernels; ++k) yaml += (k ? ", kernel" : "kernel") + std::to_string(k);
  yaml += "]\nsearch:\n  levels:\n    source:\n      mutators: []\n";
  config::TuneConfig config = config::parse_tune_config(yaml, dir / "tune.yaml");
  auto capture = capture::CaptureReader::open(dir / "c.h5");
  std::vector<KernelTarget> targets;
  for (int k = 0; k < kernels; ++k) {
    KernelTarget t = recorded_target(static_cast<std::size_t>(k));
    if (with_parameters) give_tunable_source(t, static_cast<std::size_t>(k));
    if (adjust) adjust(t);
    targets.push_back(t);
  }
  Search search(config, config::Backend::cuda, capture, targets);
  std::mt19937_64 rng(3);
  Split split;
  for (int g = 0; g < generations; ++g) {
    std::vector<Planned> planned = search.propose(static_cast<std::uint32_t>(g), batch);
    for (const Planned& p : planned) {
      run::CandidateRecord done = p.record;
      done.outcome = r3::Outcome::ok;
      done.seconds = 1e-3 * (1 + std::uniform_real_distribution<double>(0, 1)(rng));
      search.observe(done);
      if (run::is_original(done.level)) {
        ++split.originals;
        continue;
      }
      ++split.per_kernel[done.kernel];
      ++split.per_level[{done.kernel, std::string(to_string(done.level))}];
      if (const auto& b = p.request.variant.block; b && done.level == run::CandidateLevel::launch)
        split.blocks.insert({b->x, b->y, b->z});
    }
    search.end_generation();
  }
  return split;
}

// Every kernel, and within it every level that can propose, gets its share of the candidates
// over the run (within one candidate), for every batch size: the launch level is no longer
// starved by the tie-breaking of a split that starts afresh each generation.
TEST(TuneSearch, EveryKernelAndLevelGetsItsShareWhateverTheBatch) {
  for (int kernels : {1, 2, 5}) {
    for (std::size_t batch = 1; batch <= 8; ++batch) {
      SCOPED_TRACE("kernels " + std::to_string(kernels) + ", batch " + std::to_string(batch));
      // About 24 candidates per kernel: fewer than any level's space holds.
      const int generations = static_cast<int>((24 * kernels + batch - 1) / batch);
      Split split = run_search(kernels, batch, generations, /*with_parameters=*/false);
      EXPECT_EQ(split.originals, 2u * kernels) << "the recorded cubin and the recorded PTX";
      std::size_t total = 0;
      for (const auto& [k, n] : split.per_kernel) total += n;
      ASSERT_GT(total, 0u);
      for (int k = 0; k < kernels; ++k) {
        const std::size_t n = split.per_kernel[static_cast<std::size_t>(k)];
        EXPECT_LE(std::abs(double(n) - double(total) / kernels), 1.0) << "kernel " << k;
        // No source to mutate and no tunables: compiler and launch share equally.
        const std::size_t compiler = split.per_level[{std::size_t(k), "compiler"}];
        const std::size_t launch = split.per_level[{std::size_t(k), "launch"}];
        EXPECT_EQ(compiler + launch, n);
        EXPECT_LE(std::abs(double(compiler) - double(launch)), 1.0)
            << "kernel " << k << ": compiler " << compiler << ", launch " << launch;
        if (n >= 2) {
          EXPECT_GT(launch, 0u) << "the launch level was starved";
        }
      }
    }
  }
}

// A Kokkos kernel is searched only on what Kokkos' tuning interface can give the application:
// an MDRange kernel's tile or a TeamPolicy's AUTO team size and vector length (the launch level),
// never compiler options; of another Kokkos kernel nothing but its original.
TEST(TuneSearch, AKokkosKernelIsSearchedOnlyOnWhatKokkosCanBeGiven) {
  Split tiles = run_search(1, 4, 6, false, [](KernelTarget& t) {
    t.kokkos_label = "heat::step";
    t.kokkos_blocks = BlockChoices{{32, 64, 128, 256}, {1, 2, 4, 8}, {1}};
  });
  EXPECT_GT(tiles.per_kernel[0], 0u);
  const std::size_t compiler = tiles.per_level[{0, "compiler"}];
  const std::size_t launch = tiles.per_level[{0, "launch"}];
  EXPECT_EQ(compiler, 0u);
  EXPECT_EQ(launch, tiles.per_kernel[0]);
  EXPECT_EQ(tiles.originals, 1u) << "the recorded cubin only: no PTX through the JIT";

  Split none = run_search(1, 4, 6, false, [](KernelTarget& t) {
    t.kokkos_label = "policies::matvec";
    t.kokkos_blocks.reset();
  });
  EXPECT_EQ(none.per_kernel[0], 0u);
  EXPECT_EQ(none.originals, 1u);

  // A team of AUTO size and fixed vector length 4: only team sizes change.
  Split team = run_search(1, 4, 8, false, [](KernelTarget& t) {
    t.kokkos_label = "policies::matvec";
    t.original_block = capture::Dim3{4, 64, 1};
    t.kokkos_blocks = kokkos_team_choices(*t.original_block, /*auto_team_size=*/true,
                                          /*auto_vector_length=*/false);
  });
  const std::size_t team_compiler = team.per_level[{0, "compiler"}];
  EXPECT_EQ(team_compiler, 0u);
  EXPECT_GT(team.blocks.size(), 3u);
  for (const auto& [x, y, z] : team.blocks) {
    EXPECT_EQ(x, 4u) << "the vector length the application set";
    EXPECT_EQ(y & (y - 1), 0u) << "team size " << y << " is no power of two";
    EXPECT_LE(x * y, 1024u);
    EXPECT_EQ(z, 1u);
  }
}

TEST(TuneSearch, KokkosTeamChoicesAreWhatItsTeamSizeTunerCanSet) {
  const BlockChoices both = kokkos_team_choices({1, 128, 1}, true, true);
  const std::vector<std::uint32_t> vector_lengths{1, 2, 4, 8, 16, 32};
  EXPECT_EQ(both.x, vector_lengths);
  EXPECT_EQ(both.y.front(), 1u);
  EXPECT_EQ(both.y.back(), 1024u);
  EXPECT_EQ(both.y.size(), 11u);
  EXPECT_EQ(both.z, std::vector<std::uint32_t>(1, 1));
  const BlockChoices vector_only = kokkos_team_choices({1, 128, 1}, false, true);
  EXPECT_EQ(vector_only.y, std::vector<std::uint32_t>(1, 128));
  EXPECT_EQ(vector_only.x.size(), 6u);
}

TEST(TuneSearch, ParameterLevelGetsItsShareNextToTheOthers) {
  Split split = run_search(2, 3, 12, /*with_parameters=*/true);
  for (std::size_t k = 0; k < 2; ++k) {
    const std::size_t compiler = split.per_level[{k, "compiler"}];
    const std::size_t launch = split.per_level[{k, "launch"}];
    const std::size_t parameters = split.per_level[{k, "parameters"}];
    EXPECT_GT(parameters, 0u);
    EXPECT_LE(std::max({compiler, launch, parameters}) - std::min({compiler, launch, parameters}),
              1u)
        << compiler << " " << launch << " " << parameters;
  }
}

// A level's optimizer proposes at most its pending room (search.bo.pending_per_observation: at
// first 4, or initial_samples where more, less its defaults, which the originals run) while
// other work can take the batch, and only the rest beyond it. Kernel 0 has a parameter level
// (three optimizers, room 9), kernel 1 only compiler and launch (room 5: its compiler level also
// runs the recorded PTX through the JIT). Generation 0 asks for the four originals and 14 more:
// kernel 0 takes 9, more than its even half, since kernel 1's optimizers are full at 5. Nothing
// observed, generation 1 is still filled, beyond the limit.
TEST(TuneSearch, AnOptimizerAtItsPendingLimitLeavesTheBatchToOtherWork) {
  for (const std::string limit : {"0.25", "0"}) {
    SCOPED_TRACE("pending_per_observation " + limit);
    test::TempDir dir;
    write_cuda_capture(dir / "c.h5", 2);
    const std::string yaml =
        "capture: c.h5\nbackend: cuda\nkernels: [kernel0, kernel1]\nsearch:\n  levels:\n"
        "    source:\n      mutators: []\n  bo:\n    pending_per_observation: " +
        limit + "\n";
    config::TuneConfig config = config::parse_tune_config(yaml, dir / "tune.yaml");
    auto capture = capture::CaptureReader::open(dir / "c.h5");
    std::vector<KernelTarget> targets = {recorded_target(0), recorded_target(1)};
    give_tunable_source(targets[0], 0);
    Search search(config, config::Backend::cuda, capture, targets);
    std::map<std::uint32_t, std::size_t> searched;  // per kernel, generation 0
    const std::vector<Planned> first = search.propose(0, 18);
    ASSERT_EQ(first.size(), 18u);
    for (const Planned& p : first)
      if (!run::is_original(p.record.level)) ++searched[p.record.kernel];
    if (limit == "0") {
      EXPECT_GE(searched[1], 7u);
    } else {
      EXPECT_EQ(searched[0], 9u);
      EXPECT_EQ(searched[1], 5u);
    }
    EXPECT_EQ(search.propose(1, 20).size(), 20u) << "the rest is taken beyond the limit";
  }
}

// A level whose configurations lose GPU contexts (failures costing 300 times a success) has one
// in flight at a time once it has seen one, and is not given the rest of a batch that nothing
// else takes: without the limit it filled every batch.
TEST(TuneSearch, ALevelThatLostAContextHasOneInFlight) {
  test::TempDir dir;
  write_cuda_capture(dir / "c.h5", 1);
  const std::string yaml =
      "capture: c.h5\nbackend: cuda\nkernels: [kernel0]\nsearch:\n  levels:\n    source:\n"
      "      mutators: []\n  bo:\n    max_costly_failures: 0\n";  // (it would stop the level)
  config::TuneConfig config = config::parse_tune_config(yaml, dir / "tune.yaml");
  auto capture = capture::CaptureReader::open(dir / "c.h5");
  KernelTarget t = recorded_target(0);
  give_tunable_source(t, 0);
  Search search(config, config::Backend::cuda, capture, {t});
  auto observe = [&](const Planned& p) {
    run::CandidateRecord done = p.record;
    const bool parameters = p.plan.searched == Level::parameters;
    done.outcome = parameters ? r3::Outcome::launch_error : r3::Outcome::ok;
    done.seconds = 1e-3;
    done.evaluation_seconds = parameters ? 3.0 : 0.01;
    search.observe(done);
  };
  for (const Planned& p : search.propose(0, 12)) observe(p);
  search.end_generation();
  std::size_t in_flight = 0, most_in_flight = 0;
  for (std::uint32_t g = 1; g <= 6; ++g) {
    for (const Planned& p : search.propose(g, 12)) {
      if (p.plan.searched == Level::parameters) {
        ++in_flight;  // left in flight: its loss is not observed yet
      } else {
        observe(p);
      }
    }
    search.end_generation();
    most_in_flight = std::max(most_in_flight, in_flight);
  }
  EXPECT_GE(most_in_flight, 1u) << "the parameter level proposed nothing";
  EXPECT_LE(most_in_flight, 1u);
}

// Observes a proposed candidate as run and verified, in 1 ms.
void observe_ok(Search& search, const Planned& p) {
  run::CandidateRecord done = p.record;
  done.outcome = r3::Outcome::ok;
  done.seconds = 1e-3;
  search.observe(done);
}

// `generations` generations of `batch` candidates, each observed as verified in 1 ms, each
// shown to `seen` first.
template <class Seen>
void run_generations(Search& search, std::uint32_t generations, std::size_t batch, Seen&& seen) {
  for (std::uint32_t g = 0; g < generations; ++g) {
    for (const Planned& p : search.propose(g, batch)) {
      seen(p);
      observe_ok(search, p);
    }
    search.end_generation();
  }
}

// The job proposes ahead: a generation may be proposed before the ones before it are observed
// (here: 0, 1, observe 0, 2, observe 1, commit, 3 ...). A resume from what was committed
// replays that order: it gives back the generation proposed but not committed exactly as the
// uninterrupted run proposed it, and then proposes what the uninterrupted run did next.
TEST(TuneSearch, AResumeReplaysTheOrderInWhichGenerationsWereProposedAndObserved) {
  // At 9 per generation the optimizers reach their pending limit and the batches' rest is
  // proposed beyond it: the resume holds back, and comes back to, the same ones.
  for (const std::size_t batch : {5, 9}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    test::TempDir dir;
    write_cuda_capture(dir / "c.h5", 1);
    const std::string yaml =
        "capture: c.h5\nbackend: cuda\nkernels: [kernel0]\nsearch:\n  levels:\n    source:\n"
        "      mutators: []\n";
    config::TuneConfig config = config::parse_tune_config(yaml, dir / "tune.yaml");
    auto capture = capture::CaptureReader::open(dir / "c.h5");
    KernelTarget t = recorded_target(0);
    give_tunable_source(t, 0);

    Search live(config, config::Backend::cuda, capture, {t});
    run::RunRecord record;
    std::map<std::uint32_t, std::vector<Planned>> proposed;
    auto propose = [&](Search& s, std::uint32_t g) {
      std::vector<Planned> made = s.propose(g, batch);
      for (const Planned& p : made)
        record.sources.emplace(p.record.source, s.sources().at(p.record.source));
      return made;
    };
    auto observe = [&](std::uint32_t g) {
      for (const Planned& p : proposed.at(g)) {
        run::CandidateRecord done = p.record;
        done.outcome = p.record.id % 7 == 3 ? r3::Outcome::compile_error : r3::Outcome::ok;
        done.seconds = done.outcome == r3::Outcome::ok
                           ? 1e-3 * (1 + 0.1 * static_cast<double>(p.record.id % 5))
                           : 0;
        live.observe(done);
        record.candidates.push_back(done);
      }
      live.end_generation();
      record.generations = g + 1;
    };
    proposed[0] = propose(live, 0);
    proposed[1] = propose(live, 1);
    observe(0);
    // The state written at every commit keeps the text of the proposals it wrote before.
    const std::string before = live.state();
    proposed[2] = propose(live, 2);
    proposed[3] = propose(live, 3);
    observe(1);
    record.search_state = live.state();  // committed: generations 0 and 1; 2 and 3 in flight
    auto proposals_text = [](const std::string& state) {
      const std::size_t from = state.find(R"("proposals":[)"), to = state.find(R"(],"rng":)");
      EXPECT_NE(from, std::string::npos) << state;
      EXPECT_NE(to, std::string::npos) << state;
      return state.substr(from + 13, to - from - 13);
    };
    EXPECT_EQ(proposals_text(record.search_state).rfind(proposals_text(before) + ",[", 0), 0u)
        << before << "\n"
        << record.search_state;
    proposed[4] = propose(live, 4);

    Search resumed(config, config::Backend::cuda, capture, {t});
    std::vector<std::vector<Planned>> in_flight = resumed.restore(record);
    ASSERT_EQ(in_flight.size(), 2u);
    for (std::uint32_t g : {2u, 3u}) {
      const std::vector<Planned>& again = in_flight[g - 2];
      ASSERT_EQ(again.size(), proposed.at(g).size()) << "generation " << g;
      for (std::size_t i = 0; i < again.size(); ++i) {
        EXPECT_EQ(again[i].record.id, proposed.at(g)[i].record.id);
        EXPECT_EQ(again[i].record.plan, proposed.at(g)[i].record.plan) << "generation " << g;
      }
    }
    std::vector<Planned> next = resumed.propose(4, batch);
    ASSERT_EQ(next.size(), proposed.at(4).size());
    for (std::size_t i = 0; i < next.size(); ++i)
      EXPECT_EQ(next[i].record.plan, proposed.at(4)[i].record.plan);
  }
}

// A CUDA kernel is recorded under its mangled name; its source names it plainly. The mutators
// look for the name the source has (they once looked for "_Z7kernel0Pf" and found nothing).
TEST(TuneSearch, TheMutatorsFindARecordedKernelByItsNameInTheSource) {
  test::TempDir dir;
  write_cuda_capture(dir / "c.h5", 1);
  config::TuneConfig config = config::parse_tune_config(
      "capture: c.h5\nbackend: cuda\nkernels:\n  - name: kernel0\n", dir / "tune.yaml");
  auto capture = capture::CaptureReader::open(dir / "c.h5");
  KernelTarget t;
  t.name = "_Z7kernel0Pf";
  t.source_entry = "kernel0";
  t.original_block = capture::Dim3{128, 1, 1};
  t.has_recorded_cubin = t.has_recorded_ptx = true;
  t.base.compiler = replay::Compiler::nvrtc;
  t.source = "__global__ void kernel0(float* x) {\n  for (int i = 0; i < 4; ++i) x[i] *= 2;\n}\n";
  t.source_name = "k.cu";
  EXPECT_EQ(entry_in_source(t), "kernel0");
  Search search(config, config::Backend::cuda, capture, {t});
  std::size_t rewrites = 0;
  run_generations(search, 4, 8, [&](const Planned& p) {
    rewrites += p.record.level == run::CandidateLevel::source;
  });
  EXPECT_GT(rewrites, 0u) << "no mutator rewrote the kernel";
}

// A kernel whose source includes a header from one of its include_dirs and uses macros its
// defines and flags give: the mutators read it with them, as its candidates are compiled, and
// rewrite it. They once read it bare: it did not parse, and the job had no source rewrites at
// all, with a debug line to say why. Its flags hold an NVRTC option too, which Clang does not
// know: only the reading flags (-D here) reach the mutators.
TEST(TuneSearch, TheMutatorsReadTheSourceWithTheKernelsIncludeDirsDefinesAndFlags) {
  if (!evolve::mutators_available()) GTEST_SKIP() << "no built-in mutators in this build";
  test::TempDir dir;
  write_cuda_capture(dir / "c.h5", 1);
  std::filesystem::create_directories(dir / "include");
  std::ofstream(dir / "include" / "factor.h") << "#define FACTOR 2.0f\n";
  config::TuneConfig config = config::parse_tune_config(
      "capture: c.h5\nbackend: cuda\nkernels:\n  - name: kernel0\n", dir / "tune.yaml");
  auto capture = capture::CaptureReader::open(dir / "c.h5");
  auto rewrites_of = [&](bool with_build_settings) {
    KernelTarget t = recorded_target(0);
    t.source =
        "#include \"factor.h\"\n"
        "__global__ void kernel0(float* x) {\n"
        "  for (int i = 0; i < COUNT; ++i) x[i] *= FACTOR * SIGN;\n"
        "}\n";
    t.source_name = "k.cu";
    t.source_path = (dir / "src" / "k.cu").string();
    if (with_build_settings) {
      t.base.include_dirs = {dir / "include"};
      t.base.defines = {{"COUNT", "4"}};
      t.base.flags = {"--use_fast_math", "-DSIGN=1"};
    }
    Search search(config, config::Backend::cuda, capture, {t});
    std::size_t rewrites = 0;
    run_generations(search, 4, 8, [&](const Planned& p) {
      rewrites += p.record.level == run::CandidateLevel::source;
    });
    return rewrites;
  };
  EXPECT_EQ(rewrites_of(false), 0u) << "the source should need its build's settings to parse";
  EXPECT_GT(rewrites_of(true), 0u) << "no mutator rewrote a kernel that parses with its settings";
}

// The built-in mutators parse their parent with Clang on rank 0. A source a mutator made is
// mutated ahead of its evaluation (it may enter the archive once it has run); an LLM's source is
// hostile until it has compiled and run in the sandbox, and is parsed only then.
TEST(TuneSearch, AnLlmSourceIsParsedOnRankZeroOnlyOnceItHasRunInTheSandbox) {
  if (!evolve::mutators_available()) GTEST_SKIP() << "no built-in mutators in this build";
  test::TempDir dir;
  write_cuda_capture(dir / "c.h5", 1);
  const std::string yaml =
      "capture: c.h5\nbackend: cuda\nkernels: [kernel0]\n"
      "llm: {endpoint: 'http://127.0.0.1:9/v1', model: m}\n"
      "search:\n  levels:\n    compiler: {enabled: false}\n    launch: {enabled: false}\n"
      "    parameters: {enabled: false}\n";
  config::TuneConfig config = config::parse_tune_config(yaml, dir / "tune.yaml");
  auto capture = capture::CaptureReader::open(dir / "c.h5");
  KernelTarget t = recorded_target(0);
  t.source = "__global__ void kernel0(float* x) {\n  for (int i = 0; i < 4; ++i) x[i] *= 2;\n}\n";
  t.source_name = "k.cu";
  Search search(config, config::Backend::cuda, capture, {t});
  auto run = [&](std::uint32_t generation, std::size_t count) {
    std::vector<Planned> planned = search.propose(generation, count);
    for (const Planned& p : planned) observe_ok(search, p);
    search.end_generation();
    return planned;
  };
  run(0, 2);  // the originals

  std::vector<evolve::ChatRequest> requests = search.llm_requests(1);
  ASSERT_EQ(requests.size(), 1u);
  std::string rewrite = t.source;
  rewrite.replace(rewrite.find("*= 2"), 4, "*= 2.0f");
  evolve::ChatResult answer;
  answer.tag = requests[0].tag;
  answer.content = "```cuda\n" + rewrite + "```\n";
  search.take_llm_answer(answer);
  ASSERT_EQ(search.llm_answers_rejected(), 0u);

  std::vector<Planned> planned = search.propose(1, 1);
  ASSERT_EQ(planned.size(), 1u);
  ASSERT_EQ(planned[0].record.description.rfind("LLM rewrite", 0), 0u)
      << planned[0].record.description;
  const Hash128 llm_source = planned[0].record.source;
  EXPECT_FALSE(search.mutations_asked_for(0, llm_source))
      << "rank 0 parses the LLM's source before it has run";
  observe_ok(search, planned[0]);
  search.end_generation();
  EXPECT_TRUE(search.mutations_asked_for(0, llm_source)) << "once it has run, it is a parent";

  // A mutator's source is asked for ahead of its evaluation.
  bool mutator_source = false;
  for (std::uint32_t g = 2; g < 6 && !mutator_source; ++g) {
    for (const Planned& p : search.propose(g, 4)) {
      if (p.record.level == run::CandidateLevel::source &&
          p.record.description.rfind("LLM rewrite", 0) != 0) {
        mutator_source = true;
        EXPECT_TRUE(search.mutations_asked_for(0, p.record.source)) << p.record.description;
      }
      observe_ok(search, p);
    }
    search.end_generation();
  }
  EXPECT_TRUE(mutator_source) << "no mutator made a source: the comparison proves nothing";
}

// A source whose sizes fix its launch (R3_LAUNCH_BLOCK, or tune.yaml's block naming its
// tunables) is launched with the block its values give, and the launch level leaves it alone.
TEST(TuneSearch, ASourceCoupledToItsBlockIsLaunchedWithTheBlockItsValuesGive) {
  for (bool declared_in_source : {true, false}) {
    SCOPED_TRACE(declared_in_source ? "R3_LAUNCH_BLOCK" : "tune.yaml block: [TILE, TILE, 1]");
    test::TempDir dir;
    write_cuda_capture(dir / "c.h5", 1);
    std::string yaml =
        "capture: c.h5\nbackend: cuda\nkernels:\n  - name: kernel0\n"
        "search:\n  levels:\n    source:\n      mutators: []\n";
    config::TuneConfig config = config::parse_tune_config(yaml, dir / "tune.yaml");
    auto capture = capture::CaptureReader::open(dir / "c.h5");
    KernelTarget t;
    t.name = "kernel0";
    t.original_block = capture::Dim3{16, 16, 1};
    t.has_recorded_cubin = t.has_recorded_ptx = true;
    t.base.compiler = replay::Compiler::nvrtc;
    t.source = std::string("R3_TUNABLE(TILE, 16, 4 8 16 32)\n") +
               (declared_in_source ? "R3_LAUNCH_BLOCK(TILE, TILE, 1)\n" : "") +
               "__global__ void kernel0(float* x) { x[threadIdx.x] *= TILE; }\n";
    t.source_name = "k.cu";
    if (!declared_in_source) t.block_expressions = evolve::BlockExpressions{"TILE", "TILE", "1"};
    Search search(config, config::Backend::cuda, capture, {t});
    std::set<std::uint32_t> blocks;
    std::size_t from_source = 0;
    run_generations(search, 12, 4, [&](const Planned& p) {
      EXPECT_NE(p.record.level, run::CandidateLevel::launch)
          << "the launch level would change a coupled block";
      if (p.record.source == hash_string("")) return;  // the recorded code
      ++from_source;
      const replay::Variant& v = p.request.variant;
      ASSERT_TRUE(v.block.has_value()) << to_string(p.record.level) << ": " << p.record.description;
      const std::string tile = v.defines.contains("TILE") ? v.defines.at("TILE") : "16";
      EXPECT_EQ(v.block->x, std::stoul(tile)) << p.record.description;
      EXPECT_EQ(v.block->y, std::stoul(tile));
      EXPECT_EQ(v.block->z, 1u);
      blocks.insert(v.block->x);
    });
    EXPECT_GT(from_source, 4u);
    EXPECT_GE(blocks.size(), 2u) << "the parameter level never moved the block with TILE";
  }
  // tune.yaml's block holds only for sources that declare every name it uses.
  EXPECT_TRUE(evolve::keeps_recorded_grid("R3_LAUNCH_BLOCK(T, 1, 1)\nR3_LAUNCH_GRID(recorded)\n"));
  EXPECT_FALSE(evolve::keeps_recorded_grid("#define R3_LAUNCH_GRID(...)\n"));
  EXPECT_FALSE(coupled_block("R3_TUNABLE(N, 1, 1 2)\n",
                             evolve::parse_tunables("R3_TUNABLE(N, 1, 1 2)\n"),
                             evolve::BlockExpressions{"TILE", "1", "1"}));
  EXPECT_EQ(block_of({"TILE*2", "TILE", "1"}, {{"TILE", "8", {"8", "16"}}}, {{"TILE", "16"}}),
            (capture::Dim3{32, 16, 1}));
  EXPECT_FALSE(block_of({"TILE-8", "1", "1"}, {{"TILE", "8", {"8"}}}, {})) << "a zero block";
}

}  // namespace
}  // namespace r3::tune
