// r3::report: unified diffs that `patch` applies, the analysis of a run (confirmed winner, paired
// speedup and spread, lineage, levels), and the results directory (files, sections, CSV rows,
// a best.yaml that parses as tune.yaml with the winner's configuration).
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "r3/config/tune_config.hpp"
#include "r3/report/analysis.hpp"
#include "r3/report/diff.hpp"
#include "r3/report/results.hpp"
#include "r3/report/unit_patch.hpp"
#include "support/files.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

using r3::test::read_text_file;

namespace fs = std::filesystem;
using namespace r3::report;
using r3::run::CandidateRecord;
using r3::run::ConfirmationRecord;
using r3::run::RunRecord;
using r3::test::TempDir;

// Applies `patch` with patch(1) to a copy of `before` and returns the result.
std::string apply_with_patch(const std::string& before, const std::string& diff,
                             const std::string& name = "kernel.cpp") {
  TempDir dir;
  std::ofstream(dir / name, std::ios::binary) << before;
  std::ofstream(dir / "change.diff", std::ios::binary) << diff;
  r3::test::ProcessResult r = r3::test::run_process(
      {"patch", "-p1", "-s", "-d", dir.path().string(), "-i", (dir / "change.diff").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << "\n" << diff;
  return read_text_file(dir / name);
}

TEST(ReportDiff, PatchAppliesItAndGetsTheNewText) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a\nb\nc\n", "a\nB\nc\n"},
      {"", "new\nfile\n"},
      {"x\ny\n", ""},
      {"one\ntwo\n", "zero\none\ntwo\nthree\n"},
      {"no newline at the end", "no newline at the end\nnow there is\n"},
      {"last\n", "last"},
  };
  for (const auto& [before, after] : cases) {
    std::string diff = unified_diff(before, after, "kernel.cpp");
    ASSERT_FALSE(diff.empty());
    EXPECT_EQ(diff.rfind("--- a/kernel.cpp\n+++ b/kernel.cpp\n@@ -", 0), 0u) << diff;
    EXPECT_EQ(apply_with_patch(before, diff), after) << diff;
  }
  EXPECT_EQ(unified_diff("same\n", "same\n", "kernel.cpp"), "");
}

TEST(ReportDiff, RandomEditsOfALongFileApplyWithSeparateHunks) {
  std::mt19937 rng(7);
  std::string before;
  for (int i = 0; i < 300; ++i) before += "line " + std::to_string(i % 37) + "\n";
  for (int trial = 0; trial < 5; ++trial) {
    std::istringstream lines(before);
    std::string after, line;
    while (std::getline(lines, line)) {
      int roll = static_cast<int>(rng() % 40);
      if (roll == 0) continue;                            // delete
      if (roll == 1) after += "inserted " + line + "\n";  // insert before
      after += (roll == 2 ? "changed " + line : line) + "\n";
    }
    std::string diff = unified_diff(before, after, "kernel.cpp");
    EXPECT_GT(std::count(diff.begin(), diff.end(), '@'), 8) << "expected several hunks";
    EXPECT_EQ(apply_with_patch(before, diff), after);
  }
}

// A run of one kernel: original 10 ms; candidate 1 (compiler) 6 ms; candidate 2 (a new source,
// parent 0) 5 ms in its single sample; candidate 3 (parameters on candidate 2's source) 4 ms in
// its sample but it times out once in the confirmation; candidate 4 crashed.
RunRecord sample_run(const fs::path& dir) {
  RunRecord r;
  r.tune_file = (dir / "tune.yaml").string();
  r.tune_yaml =
      "capture: demo.h5\nkernels:\n  - name: stencil2d\n    source: stencil.cpp\n"
      "    launches: [0, 1]\n";
  r.generations = 2;
  r.elapsed_seconds = 9;
  r.sessions = 1;
  r.r3_version = "test";
  std::string original = "int k(int x) {\n  return x;\n}\n";
  std::string better = "int k(int x) {\n  return x + 0;\n}\n";
  r.sources[r3::hash_string(original)] = original;
  r.sources[r3::hash_string(better)] = better;
  auto add = [&](std::uint64_t id, std::int64_t parent, const std::string& text,
                 const std::string& level, const std::string& outcome, double seconds,
                 const std::string& configuration) {
    CandidateRecord c;
    c.id = id;
    c.generation = id < 2 ? 0 : 1;
    c.parent = parent;
    c.source = r3::hash_string(text);
    c.level = *r3::run::candidate_level_from_string(level);
    c.description = level + " #" + std::to_string(id);
    c.outcome = *r3::outcome_from_string(outcome);
    c.seconds = seconds;
    c.evaluator = 1 + static_cast<int>(id % 2);
    c.run_seconds = 3.0 * (c.generation + 1);
    c.configuration = configuration;
    r.candidates.push_back(c);
  };
  add(0, -1, original, "original", "ok", 10e-3, R"({"entry":"","defines":{},"flags":[]})");
  add(1, -1, original, "compiler", "ok", 6e-3,
      R"({"entry":"","defines":{},"flags":["-ffast-math"],"passes":"default<O3>"})");
  add(2, 0, better, "source", "ok", 5e-3, R"j({"entry":"","defines":{"R3_TUNABLE(...)":""}})j");
  add(3, 2, better, "parameters", "ok", 4e-3,
      R"j({"entry":"","defines":{"R3_TUNABLE(...)":"","TILE":"16"},"flags":[],"passes":"default<O2>"})j");
  add(4, 0, better, "compiler", "crash", 0, "{}");
  // Confirmation after generation 2 on evaluators 1 and 2, two rounds: original ~10 ms,
  // candidate 1 ~6 ms, candidate 2 ~5.5 ms, candidate 3 fast but one timeout.
  std::uint32_t slot = 0;
  for (int evaluator : {1, 2}) {
    for (std::uint32_t round = 0; round < 2; ++round, ++slot) {
      auto confirm = [&](std::uint64_t id, double seconds, const std::string& outcome) {
        ConfirmationRecord c;
        c.candidate = id;
        c.after_generation = 2;
        c.round = round;
        c.evaluator = evaluator;
        c.repeats = 50;
        c.outcome = *r3::outcome_from_string(outcome);
        c.seconds = outcome == "ok" ? seconds : 0;
        r.confirmations.push_back(c);
      };
      confirm(0, 10e-3 + 1e-4 * slot, "ok");
      confirm(1, 6e-3, "ok");
      confirm(2, 5e-3 + 1e-4 * slot, "ok");
      confirm(3, 3e-3, slot == 3 ? "timeout" : "ok");
    }
  }
  // An older confirmation, superseded: it must not count.
  ConfirmationRecord old;
  old.candidate = 1;
  old.after_generation = 1;
  old.evaluator = 1;
  old.outcome = r3::Outcome::ok;
  old.seconds = 1e-3;
  r.confirmations.push_back(old);
  return r;
}

TEST(ReportAnalysis, TheWinnerIsTheFastestConfirmedCandidateThatNeverFailed) {
  TempDir dir;
  RunRecord run = sample_run(dir.path());
  std::vector<KernelResult> results = analyse(run, {"stencil2d"});
  ASSERT_EQ(results.size(), 1u);
  const KernelResult& k = results[0];
  ASSERT_TRUE(k.confirmed);
  ASSERT_NE(k.winner, nullptr);
  EXPECT_EQ(k.winner->id, 2u) << "candidate 3 timed out once, candidate 1 is slower";
  EXPECT_EQ(k.best_sample->id, 3u);
  EXPECT_EQ(k.pairs, 4u);
  EXPECT_EQ(k.evaluators, (std::set<int>{1, 2}));
  // Ratios of neighbours: (10 + 0.1 s) / (5 + 0.1 s) for s = 0..3.
  std::vector<double> ratios;
  for (int s = 0; s < 4; ++s) ratios.push_back((10 + 0.1 * s) / (5 + 0.1 * s));
  EXPECT_DOUBLE_EQ(k.speedup, median(ratios));
  EXPECT_DOUBLE_EQ(k.speedup_low, ratios.back());
  EXPECT_DOUBLE_EQ(k.speedup_high, ratios.front());
  EXPECT_DOUBLE_EQ(k.original_seconds, median({10e-3, 10.1e-3, 10.2e-3, 10.3e-3}));
  ASSERT_EQ(k.lineage.size(), 2u);
  EXPECT_EQ(k.lineage[0]->id, 0u);
  EXPECT_EQ(k.lineage[1]->id, 2u);
  EXPECT_EQ(k.levels.at("compiler").evaluated, 2u);
  EXPECT_EQ(k.levels.at("compiler").ok, 1u);
  EXPECT_DOUBLE_EQ(k.levels.at("parameters").best_seconds, 4e-3);
}

TEST(ReportAnalysis, WithoutAConfirmationTheBestSampleIsReportedAsUnconfirmed) {
  TempDir dir;
  RunRecord run = sample_run(dir.path());
  run.confirmations.clear();
  const KernelResult k = analyse(run, {"stencil2d"}).at(0);
  EXPECT_FALSE(k.confirmed);
  ASSERT_NE(k.winner, nullptr);
  EXPECT_EQ(k.winner->id, 3u);
  EXPECT_DOUBLE_EQ(k.speedup, 2.5);
  ASSERT_EQ(k.lineage.size(), 3u);  // original -> source #2 -> parameters #3
  EXPECT_EQ(k.lineage[1]->id, 2u);
  std::vector<std::string> lines = summary_lines({k});
  EXPECT_NE(lines.at(0).find("not confirmed"), std::string::npos) << lines.at(0);
}

// A candidate faster in the median of the neighbouring pairs but slower in one of them is not
// confirmed faster: the application's code is kept, and best.yaml and the summary say so.
TEST(ReportAnalysis, WithoutAWinInEveryPairTheApplicationsCodeIsKept) {
  TempDir dir;
  RunRecord run = sample_run(dir.path());
  for (auto& c : run.confirmations) {
    if (c.candidate == 2 && c.evaluator == 2 && c.round == 1) c.seconds = 11e-3;  // one pair lost
    if (c.candidate == 1) c.seconds = 10.5e-3;  // slower than the original everywhere
  }
  const KernelResult k = analyse(run, {"stencil2d"}).at(0);
  ASSERT_TRUE(k.confirmed);
  EXPECT_TRUE(k.keep_original);
  ASSERT_NE(k.winner, nullptr);
  EXPECT_EQ(k.winner->id, 0u);
  EXPECT_DOUBLE_EQ(k.speedup, 1.0);
  std::vector<std::string> lines = summary_lines({k});
  EXPECT_NE(lines.at(0).find("keep the application's code"), std::string::npos) << lines.at(0);
  ResultsFiles files = write_results(run, dir / "results");
  const std::string fragment = read_text_file(files.kernels.at(0).fragment);
  EXPECT_NE(fragment.find("# keep the application's code"), std::string::npos) << fragment;
}

// Where the original is the recorded code (no source text), the rebuilt original's ratio to it
// is reported, and the winner's patch is made against the kernel's source (the rebuilt one's).
TEST(ReportAnalysis, TheRebuiltOriginalIsComparedWithTheRecordedCode) {
  TempDir dir;
  RunRecord run = sample_run(dir.path());
  const std::string source = run.sources.at(run.candidates[0].source);
  run.sources[r3::hash_string("")] = "";
  run.candidates[0].source = r3::hash_string("");  // the recorded cubin
  CandidateRecord rebuilt = run.candidates[1];
  rebuilt.id = 5;
  rebuilt.level = r3::run::CandidateLevel::rebuilt;
  rebuilt.source = r3::hash_string(source);
  rebuilt.seconds = 12.5e-3;
  run.candidates.insert(run.candidates.begin() + 1, rebuilt);
  for (std::uint32_t round = 0; round < 2; ++round) {
    for (int evaluator : {1, 2}) {
      ConfirmationRecord c;
      c.candidate = 5;
      c.after_generation = 2;
      c.round = round;
      c.evaluator = evaluator;
      c.outcome = r3::Outcome::ok;
      c.seconds = 12.5e-3;
      run.confirmations.push_back(c);
    }
  }
  const KernelResult k = analyse(run, {"stencil2d"}).at(0);
  ASSERT_NE(k.rebuilt, nullptr);
  EXPECT_NEAR(k.rebuilt_ratio, 10.15 / 12.5, 0.01) << "the rebuild is slower than the cubin";
  EXPECT_NE(summary_lines({k}).at(0).find("rebuilt original at 0.81"), std::string::npos)
      << summary_lines({k}).at(0);
  ResultsFiles files = write_results(run, dir / "results");
  EXPECT_EQ(apply_with_patch(source, read_text_file(files.kernels.at(0).diff), "stencil.cpp"),
            read_text_file(files.kernels.at(0).source));
}

// A unit cut from an application's file (r3 extract's '#line' pieces): the winner's edits come
// back as a patch of that file, which applies to it; without the markers, nothing is claimed.
TEST(ReportUnitPatch, EditsOfAnExtractedUnitBecomeAPatchOfTheApplicationsFile) {
  TempDir dir;
  const std::string app =
      "#include <stdio.h>\n// a helper\n__device__ int f() { return 1; }\n\nint host() { return 0; "
      "}\nnamespace app {\n__global__ void k(int* o) { o[0] = f(); }\n}\nint main() { "
      "printf(\"%d\\n\", host()); }\n";
  const std::string path = (dir / "app.cu").string();
  std::ofstream(path) << app;
  const std::string unit = "// The device-only unit of kernel 'app::k', extracted by r3\n#define X 1\n"
                           "#line 3 \"" + path + "\"\n__device__ int f() { return 1; }\n"
                           "namespace app {  // (r3 extract)\n#line 7 \"" + path +
                           "\"\n__global__ void k(int* o) { o[0] = f(); }\n}  // namespace app "
                           "(r3 extract)\n";
  std::string best = unit;
  best.replace(best.find("o[0] = f();"), 11, "o[0] = f() + 1;");
  std::vector<r3::report::FilePatch> patches = r3::report::patch_files_from_unit(unit, best);
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].file, path);
  std::string expected = app;
  expected.replace(expected.find("o[0] = f();"), 11, "o[0] = f() + 1;");
  EXPECT_EQ(patches[0].after, expected);
  EXPECT_EQ(apply_with_patch(app, unified_diff(patches[0].before, patches[0].after, "app.cu"),
                             "app.cu"),
            expected);
  EXPECT_TRUE(r3::report::patch_files_from_unit(unit, unit).empty()) << "nothing changed";
  std::string unmarked = best;
  unmarked.erase(unmarked.find("#line 7"), unmarked.find('\n', unmarked.find("#line 7")) -
                                               unmarked.find("#line 7") + 1);
  EXPECT_TRUE(r3::report::patch_files_from_unit(unit, unmarked).empty()) << "a marker is gone";
}

// A header above the kernel's directory (Rodinia's lavaMD: kernel/kernel_gpu_cuda.cu and
// main.h): the patch is named from the directory that holds both, says so on its first line, and
// applies there (`patch` refuses names with "..", which names relative to the kernel's
// directory would need).
TEST(ReportUnitPatch, APatchOfAHeaderAboveTheSourceAppliesInTheDirectoryAboveBoth) {
  TempDir dir;
  fs::create_directories(dir / "kernel");
  std::ofstream(dir / "main.h") << "#define THREADS 128\n";
  std::ofstream(dir / "kernel" / "k.cu") << "__global__ void k() {}\n";
  const std::vector<r3::report::FilePatch> files = {
      {dir / "kernel" / ".." / "main.h", "#define THREADS 128\n", "#define THREADS 256\n"},
      {dir / "kernel" / "k.cu", "__global__ void k() {}\n", "__global__ void k() { }\n"}};
  const std::string patch = r3::report::application_patch(files, dir / "kernel");
  EXPECT_EQ(patch.rfind("# r3: apply in " + fs::absolute(dir.path()).lexically_normal().string(), 0), 0u)
      << patch;
  EXPECT_NE(patch.find("--- a/main.h\n"), std::string::npos) << patch;
  EXPECT_NE(patch.find("--- a/kernel/k.cu\n"), std::string::npos) << patch;
  EXPECT_EQ(patch.find(".."), std::string::npos) << patch;
  std::ofstream(dir / "best.diff") << patch;
  auto applied = r3::test::run_process(
      {"patch", "-p1", "-s", "-d", dir.path().string(), "-i", (dir / "best.diff").string()});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  EXPECT_EQ(read_text_file(dir / "main.h"), "#define THREADS 256\n");
  EXPECT_EQ(read_text_file(dir / "kernel" / "k.cu"), "__global__ void k() { }\n");
  EXPECT_EQ(r3::report::application_patch({}, dir / "kernel"), "") << "nothing to patch";
}

// A parametrised winner comes back as the application's own size at the winning value, and a
// mutator's macros (defined before the unit's pieces) come along before the first piece changed
// in the kernel's file, without r3's
// declarations: the patched file builds with the application's own build.
TEST(ReportUnitPatch, TunableValuesAndTheCandidatesMacrosComeBackIntoTheApplicationsFile) {
  TempDir dir;
  const std::string app = "#include <stdio.h>\n  #define BLOCK 16\n__global__ void k(int* o) {\n"
                          "  for (int i = 0; i < BLOCK; ++i) o[i] = i;\n}\nint main() { return 0; }\n";
  const std::string path = (dir / "app.cu").string();
  std::ofstream(path) << app;
  const std::string unit = "// unit\n#line 2 \"" + path + "\"\n  #define BLOCK 16\n#line 3 \"" +
                           path + "\"\n__global__ void k(int* o) {\n  for (int i = 0; i < BLOCK; ++i) "
                           "o[i] = i;\n}\n";
  std::string best =
      "#ifndef R3_TUNABLE\n#define R3_TUNABLE(...)\n#endif\nR3_TUNABLE(BLOCK, 16, 8 16 32)\n"
      "R3_TUNABLE(R3_UNROLL_0, 4, 1 2 4 8)\n#ifndef R3_UNROLL_0\n#define R3_UNROLL_0 4\n#endif\n"
      "#ifndef R3_LAUNCH_BLOCK\n#define R3_LAUNCH_BLOCK(...)\n#endif\nR3_LAUNCH_BLOCK(BLOCK, 1, 1)\n" +
      unit;
  best.replace(best.find("  #define BLOCK 16\n"), 19, "#ifndef BLOCK\n  #define BLOCK 16\n#endif\n");
  best.replace(best.find("  for ("), 2, "\n#pragma unroll R3_UNROLL_0\n  ");
  const std::string baked = r3::report::with_tunable_values(best, {{"BLOCK", "32"}, {"R3_UNROLL_0", "8"}});
  EXPECT_NE(baked.find("R3_TUNABLE(BLOCK, 32, 8 16 32)"), std::string::npos) << baked;
  EXPECT_NE(baked.find("#ifndef BLOCK\n  #define BLOCK 32\n#endif"), std::string::npos) << baked;
  std::vector<r3::report::FilePatch> patches = r3::report::patch_files_from_unit(unit, baked);
  ASSERT_EQ(patches.size(), 1u);
  const std::string expected =
      "#include <stdio.h>\n#ifndef R3_UNROLL_0\n#define R3_UNROLL_0 8\n#endif\n#ifndef BLOCK\n"
      "  #define BLOCK 32\n#endif\n__global__ void k(int* o) {\n\n#pragma unroll 8\n"
      "  for (int i = 0; i < BLOCK; ++i) o[i] = i;\n}\nint main() { return 0; }\n";
  EXPECT_EQ(patches[0].after, expected);
  EXPECT_EQ(patches[0].after.find("R3_TUNABLE"), std::string::npos);
  EXPECT_EQ(patches[0].after.find("R3_LAUNCH"), std::string::npos);
}

TEST(ReportResults, TheDirectoryHoldsEverySectionAndFileAndTheFragmentParses) {
  TempDir dir;
  RunRecord run = sample_run(dir.path());
  ResultsFiles files = write_results(run, dir / "results");
  ASSERT_EQ(files.kernels.size(), 1u);
  const KernelFiles& k = files.kernels[0];
  EXPECT_EQ(k.source, dir / "results/stencil2d/stencil.cpp");
  EXPECT_EQ(read_text_file(k.source),
            run.sources.at(r3::hash_string("int k(int x) {\n  return x + 0;\n}\n")));
  EXPECT_EQ(apply_with_patch(run.sources.at(run.candidates[0].source), read_text_file(k.diff),
                             "stencil.cpp"),
            read_text_file(k.source));
  std::string html = read_text_file(files.report);
  for (const char* section :
       {"id=\"speedup\"", "id=\"progress-evaluations\"", "id=\"progress-wall\"", "id=\"levels\"",
        "id=\"failures\"", "id=\"lineage\"", "id=\"confirmation\""})
    EXPECT_NE(html.find(section), std::string::npos) << section;
  EXPECT_GE(r3::test::count(html, "<svg"), 5);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find("1.97x"), std::string::npos) << "the confirmed speedup, median of 4 pairs";
  // The levels' rows in their order, only those with candidates; the outcomes counted by name.
  const auto row = [&](const char* level) {
    return html.find("<tr><td>" + std::string(level) + "</td>");
  };
  ASSERT_NE(row("original"), std::string::npos);
  EXPECT_LT(row("original"), row("source"));
  EXPECT_LT(row("source"), row("compiler"));
  EXPECT_LT(row("compiler"), row("parameters"));
  EXPECT_EQ(row("launch"), std::string::npos) << "no candidate of the launch level";
  EXPECT_NE(html.find("crash: 1. ok: 4."), std::string::npos);
  std::string csv = read_text_file(files.candidates_csv);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6) << csv;
  EXPECT_NE(csv.find(",crash,"), std::string::npos);
  // The fragment is a tune.yaml: the winner's source next to it, its configuration.
  r3::config::TuneConfig fragment = r3::config::load_tune_config(k.fragment);
  ASSERT_EQ(fragment.kernels.size(), 1u);
  EXPECT_EQ(fragment.kernels[0].name, "stencil2d");
  EXPECT_EQ(fragment.kernels[0].source, k.source);
  EXPECT_EQ(fragment.kernels[0].launches, (std::vector<std::size_t>{0, 1}));
  EXPECT_TRUE(fragment.kernels[0].defines.empty()) << "R3_TUNABLE(...) is not a macro name";
  EXPECT_EQ(fragment.capture, dir / "demo.h5");
}

TEST(ReportResults, TheFragmentCarriesDefinesFlagsAndPasses) {
  TempDir dir;
  RunRecord run = sample_run(dir.path());
  run.confirmations.clear();  // candidate 3 wins on its sample
  ResultsFiles files = write_results(run, dir / "results");
  r3::config::TuneConfig fragment = r3::config::load_tune_config(files.kernels.at(0).fragment);
  const auto& kernel = fragment.kernels.at(0);
  EXPECT_EQ(kernel.defines, (std::map<std::string, std::string>{{"TILE", "16"}}));
  EXPECT_EQ(kernel.passes, "default<O2>");
  EXPECT_NE(read_text_file(files.kernels.at(0).fragment).find("not confirmed"), std::string::npos);
}

}  // namespace
