// The tuning job under mpirun -n 3 with the host backend: a run that improves on the original,
// a run where a third of the candidates crash, hang or compute wrong results, a run killed with
// SIGKILL and resumed, and the set-up errors that must end every rank with one message.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "r3/report/analysis.hpp"
#include "r3/run_database.hpp"
#include "r3/version.hpp"
#include "support/files.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

using r3::test::read_text_file;

namespace fs = std::filesystem;
using r3::test::ProcessResult;
using r3::test::TempDir;

using r3::test::count;

// "total median 170.5 us" of `r3 replay`, in seconds.
double replayed_seconds(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("total median ([0-9.]+) us"))) return 0;
  return std::stod(m[1]) * 1e-6;
}

// The winner confirmation's default 50 timed runs per launch (600 candidate processes per
// evaluator, about a minute on a 2-core machine) are what ARunImprovesOnTheOriginal checks; the
// jobs of the tests about stopping, resuming and locking confirm with 5: the same path, seconds.
constexpr const char* kShortConfirmation = "timing:\n  confirm_repeats: 5\n";

std::string data(const std::string& file) { return std::string(R3_TEST_DATA_DIR) + "/" + file; }

const std::vector<std::string> kRoot = {"OMPI_ALLOW_RUN_AS_ROOT=1",
                                        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};

// The evaluators' scratch copies in $TMPDIR whose job (the pid in the name) is gone.
std::string dead_jobs_scratch_copies() {
  std::string dead;
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path())) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with("r3-evaluator-")) continue;
    long pid = std::strtol(name.c_str() + 13, nullptr, 10);
    if (kill(static_cast<pid_t>(pid), 0) != 0) dead += name + " ";
  }
  return dead;
}

class MpiJob : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!r3::build_has_llvm()) GTEST_SKIP() << "the host backend needs LLVM in this build";
    ProcessResult made = r3::test::record_demo(R3_TEST_R3, R3_TEST_EXAMPLE_STENCIL,
                                               (dir_ / "demo.h5").string(), 512, 2);
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  std::vector<std::string> command(const std::string& yaml, std::vector<std::string> flags) {
    std::ofstream(dir_ / "tune.yaml") << yaml;
    std::vector<std::string> argv = {
        R3_TEST_MPIEXEC,   "-n",           "3",
        "--oversubscribe", R3_TEST_R3_MPI, (dir_ / "tune.yaml").string()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return argv;
  }
  ProcessResult mpirun(const std::string& yaml, std::vector<std::string> flags = {},
                       int timeout_s = 300) {
    return r3::test::run_process(command(yaml, flags), std::chrono::seconds(timeout_s), kRoot);
  }
  r3::run::RunRecord database() { return r3::run::read_run_database(dir_ / "r3-results/run.h5"); }
  TempDir dir_;
};

TEST_F(MpiJob, ARunImprovesOnTheOriginal) {
  ProcessResult result = mpirun(
      "capture: demo.h5\n"
      "kernels:\n  - name: stencil2d\n    source: " +
      data("job/stencil_order.cpp") +
      "\nsearch:\n  batch_size: 4\n"
      "budget:\n  evaluations: 24\n");
  ASSERT_FALSE(result.timed_out) << result.err;
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(count(result.err, "finished after"), 1) << result.err;
  EXPECT_NE(result.err.find("generation 0: evaluating"), std::string::npos) << result.err;
  // Each progress line says where rank 0's search time went: its parts add up to its CPU time
  // (each printed to three or four digits), and the first ten generations, committed one at a
  // time, each wrote run.h5.
  const std::regex search(
      R"(generation (\d+): .*; search [0-9.e+-]+ ms \(CPU ([0-9.e+-]+) ms: proposals )"
      R"(([0-9.e+-]+), results ([0-9.e+-]+), run\.h5 ([0-9.e+-]+)\))");
  int progress_lines = 0;
  for (auto it = std::sregex_iterator(result.err.begin(), result.err.end(), search);
       it != std::sregex_iterator(); ++it, ++progress_lines) {
    const double cpu = std::stod((*it)[2]), proposals = std::stod((*it)[3]),
                 results = std::stod((*it)[4]), write = std::stod((*it)[5]);
    EXPECT_NEAR(proposals + results + write, cpu, 0.002 * cpu + 0.02) << (*it)[0];
    if (std::stoi((*it)[1]) < 10) {
      EXPECT_GT(write, 0) << (*it)[0];
    }
  }
  EXPECT_GE(progress_lines, 3) << result.err;
  r3::run::RunRecord run = database();
  ASSERT_GE(run.candidates.size(), 12u);
  EXPECT_LE(run.candidates.size(), 24u);
  const r3::run::CandidateRecord& original = run.candidates.at(0);
  ASSERT_EQ(original.level, r3::run::CandidateLevel::original);
  ASSERT_EQ(original.outcome, r3::Outcome::ok) << original.message;
  const r3::run::CandidateRecord* best = nullptr;
  std::set<int> evaluators;
  for (const auto& c : run.candidates) {
    if (c.outcome == r3::Outcome::ok && (!best || c.seconds < best->seconds)) best = &c;
    evaluators.insert(c.evaluator);
  }
  ASSERT_NE(best, nullptr);
  // The search found the loop order, and its one sample shows it: asked no more than the
  // confirmation asks of the median of six pairs below (1.35x). A bar of 1.5x on single samples,
  // stricter than that median's, failed a fresh-clone CI on a shared 2-core machine with the
  // right candidate at 1.40x (5.88 ms against 8.26 ms), its confirmation passing.
  EXPECT_NE(best->description.find("ORDER=0"), std::string::npos)
      << "best: " << best->description << " " << best->seconds << " s";
  EXPECT_LT(best->seconds, original.seconds / 1.35)
      << "best: " << best->description << " " << best->seconds << " s, original "
      << original.seconds << " s";
  EXPECT_EQ(evaluators, (std::set<int>{1, 2})) << "both evaluators should have worked";
  std::set<std::string> levels;
  for (const auto& c : run.candidates) levels.insert(std::string(to_string(c.level)));
  EXPECT_TRUE(levels.contains("source")) << "no mutated source was tried";
  EXPECT_TRUE(levels.contains("compiler"));
  EXPECT_TRUE(levels.contains("parameters"));

  // The winner was confirmed against the original on both evaluators.
  std::set<int> confirming;
  for (const auto& c : run.confirmations) confirming.insert(c.evaluator);
  EXPECT_EQ(confirming, (std::set<int>{1, 2}));
  const r3::report::KernelResult k = r3::report::analyse(run, {"stencil2d"}).at(0);
  ASSERT_TRUE(k.confirmed) << result.err;
  // The loop order is worth about 1.8x alone (1.63x and 1.86x confirmed in CI), far above what
  // noise or the unroll parameter give: the median of the neighbouring pairs shows it. Of the
  // slowest pair the test asks what the product asks to call a winner confirmed: faster than the
  // original (otherwise the original is kept). A fixed bar above 1 is the slowest of six pairs
  // of 50-run medians on a shared 2-core machine, and CI has put that at 1.497x and at 1.249x.
  // (keep_original restates the confirmation rule: every pair faster, else the original.)
  EXPECT_FALSE(k.keep_original) << result.err;
  EXPECT_GT(k.speedup, 1.35) << result.err;
  EXPECT_EQ(count(result.err, "x confirmed ("), 1) << result.err;
  fs::path results = dir_ / "r3-results";
  EXPECT_NE(result.err.find("report: " + (results / "report.html").string()), std::string::npos)
      << result.err;

  // The results: the winner's source (the diff turns the original into it), the report.
  fs::path best_source = results / "stencil2d/stencil_order.cpp";
  ASSERT_TRUE(fs::exists(best_source));
  fs::create_directories(dir_ / "patched");
  fs::copy_file(data("job/stencil_order.cpp"), dir_ / "patched/stencil_order.cpp");
  if (fs::exists(results / "stencil2d/best.diff")) {
    ProcessResult patched =
        r3::test::run_process({"patch", "-p1", "-s", "-d", (dir_ / "patched").string(), "-i",
                               (results / "stencil2d/best.diff").string()});
    ASSERT_EQ(patched.exit_code, 0) << patched.out << patched.err;
  }
  EXPECT_EQ(read_text_file(dir_ / "patched/stencil_order.cpp"), read_text_file(best_source));
  std::string html = read_text_file(results / "report.html");
  for (const char* section :
       {"id=\"speedup\"", "id=\"progress-evaluations\"", "id=\"progress-wall\"", "id=\"levels\"",
        "id=\"failures\"", "id=\"lineage\"", "id=\"confirmation\""})
    EXPECT_NE(html.find(section), std::string::npos) << section;
  EXPECT_EQ(count(read_text_file(results / "candidates.csv"), "\n"),
            static_cast<int>(run.candidates.size()) + 1);

  // best.yaml, fed back to r3 replay, runs the winner: verified, at its confirmed time within
  // noise, and far from the original's.
  ProcessResult replayed = r3::test::run_process(
      {R3_TEST_R3, "replay", "--config", (results / "stencil2d/best.yaml").string(), "-n", "50"});
  ASSERT_EQ(replayed.exit_code, 0) << replayed.out << replayed.err;
  double seconds = replayed_seconds(replayed.out);
  EXPECT_GT(seconds, k.winner_seconds / 2) << replayed.out;
  EXPECT_LT(seconds, k.winner_seconds * 2) << replayed.out;
  EXPECT_LT(seconds, k.original_seconds / 1.5) << replayed.out;

  // r3 report rebuilds the same results from the database alone.
  ProcessResult again = r3::test::run_process(
      {R3_TEST_R3, "report", (results / "run.h5").string(), "-o", (dir_ / "again").string()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(read_text_file(dir_ / "again/stencil2d/stencil_order.cpp"),
            read_text_file(best_source));
  EXPECT_EQ(read_text_file(dir_ / "again/candidates.csv"),
            read_text_file(results / "candidates.csv"));
  EXPECT_NE(again.out.find("x confirmed ("), std::string::npos) << again.out;
}

TEST_F(MpiJob, CrashingHangingAndWrongCandidatesAreClassifiedAndTheRunFinishes) {
  ProcessResult result = mpirun(
      "capture: demo.h5\n"
      "kernels:\n  - name: stencil2d\n    source: " +
      data("job/stencil_faulty.cpp") +
      "\nsearch:\n  batch_size: 4\n  levels:\n"
      "    source: {enabled: false}\n    compiler: {enabled: false}\n"
      "timing:\n  candidate_timeout: 3s\n  repeats: 3\n"
      "budget:\n  evaluations: 30\n");
  ASSERT_FALSE(result.timed_out) << result.err;
  ASSERT_EQ(result.exit_code, 0) << result.err;
  r3::run::RunRecord run = database();
  std::map<std::string, std::string> outcome_of_mode;
  for (const auto& c : run.candidates) {
    std::smatch mode;
    std::string text = c.level == r3::run::CandidateLevel::original ? "MODE=0" : c.description;
    if (std::regex_search(text, mode, std::regex("MODE=(\\d)")))
      outcome_of_mode[mode[1]] = std::string(to_string(c.outcome));
  }
  ASSERT_EQ(outcome_of_mode.size(), 9u) << "every MODE should have been evaluated: " << result.err;
  for (std::string m : {"0", "1", "2", "3", "4", "5"}) EXPECT_EQ(outcome_of_mode[m], "ok") << m;
  EXPECT_EQ(outcome_of_mode["6"], "crash");
  EXPECT_EQ(outcome_of_mode["7"], "timeout");
  EXPECT_EQ(outcome_of_mode["8"], "wrong result");
  EXPECT_NE(result.err.find("the search has nothing left to propose"), std::string::npos);
}

// The wall-time stop looks one typical generation ahead: a generation slowed down by a hanging
// candidate (MODE 7 waits for its 4 s timeout; the others take a fraction of a second) must
// not make the run stop early. The run uses at least 85% of its wall time and not much more.
// No winner confirmation: its estimate comes from candidates' times, which a loaded CI machine
// stretches (a 12 s confirmation once ended such a run at 18.9 of 24 s); this test is about the
// generations' look-ahead alone.
TEST_F(MpiJob, OneSlowGenerationDoesNotEndARunEarly) {
  const double wall_time = 24;
  ProcessResult result = mpirun(
      "capture: demo.h5\n"
      "kernels:\n  - name: stencil2d\n    source: " +
      data("job/stencil_faulty.cpp") +
      "\nsearch:\n  batch_size: 4\n  levels:\n    source: {enabled: false}\n"
      "timing:\n  candidate_timeout: 4s\n  repeats: 3\n  confirm_top: 0\n"
      "budget:\n  wall_time: 24s\n  evaluations: 100000\n");
  ASSERT_FALSE(result.timed_out) << result.err;
  ASSERT_EQ(result.exit_code, 0) << result.err;
  r3::run::RunRecord run = database();
  bool timed_out = false;
  for (const auto& c : run.candidates) timed_out = timed_out || c.outcome == r3::Outcome::timeout;
  ASSERT_TRUE(timed_out) << "no candidate hung: the run had no slow generation to test with\n"
                         << result.err;
  EXPECT_NE(result.err.find("budget.wall_time"), std::string::npos)
      << "the run did not stop for its wall time: " << result.err;
  // 85%: a fresh-clone CI on a 2-core VM ended it at 20.98 s of 24 (87%, generations of 1.7-2.3
  // s with two in flight); a run that took the 4 s generation for a typical one would stop
  // several seconds sooner.
  EXPECT_GE(run.elapsed_seconds, 0.85 * wall_time) << result.err;
  EXPECT_LE(run.elapsed_seconds, wall_time + 10) << result.err;
}

// Generations are committed in order, so a candidate that takes long (a lost GPU context costs
// its evaluator seconds, against milliseconds per candidate) holds every later generation
// uncommitted; the other evaluator must still get new work meanwhile, not stop after the 8
// generations the search may have waiting for results.
TEST_F(MpiJob, ASlowCandidateHoldsOnlyItsOwnEvaluator) {
  ProcessResult result = mpirun(
      "capture: demo.h5\n"
      "kernels:\n  - name: stencil2d\n    source: " +
      data("job/stencil_faulty.cpp") +
      "\nbackend: simulate\n"
      "simulate: {compile: 0s, run: 0.002s, failure_rate: 0, lost_rate: 0.05, lost_time: 1.5s}\n"
      "search:\n  batch_size: 4\n  levels:\n    source: {enabled: false}\n"
      "timing:\n  confirm_top: 0\n"
      "budget:\n  evaluations: 200\n");
  ASSERT_FALSE(result.timed_out) << result.err;
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::size_t lost = 0;
  for (const auto& c : database().candidates)
    lost += c.message.find("simulated lost context") != std::string::npos;
  ASSERT_GT(lost, 0u) << "no candidate was slow: nothing to test with\n" << result.err;
  const std::regex in_flight(R"((\d+) generation\(s\) in flight)");
  int most = 0;
  for (auto it = std::sregex_iterator(result.err.begin(), result.err.end(), in_flight);
       it != std::sregex_iterator(); ++it)
    most = std::max(most, std::stoi((*it)[1]));
  EXPECT_GT(most, 8) << "the search stopped at 8 generations behind a slow candidate: " << result.err;
}

TEST_F(MpiJob, KilledWithSigkillThenResumedLosesAndRepeatsNothing) {
  std::string yaml =
      "capture: demo.h5\n"
      "kernels:\n  - name: stencil2d\n    source: " +
      data("job/stencil_order.cpp") + "\nsearch:\n  batch_size: 4\n" + kShortConfirmation +
      "budget:\n  evaluations: 40\n";
  std::vector<std::string> argv = command(yaml, {});
  std::string line;
  for (const auto& a : argv) line += "'" + a + "' ";
  // Start the job, wait until generation 2 is committed (later ones are in flight: the job
  // proposes ahead), then kill every rank at once.
  std::string log = (dir_ / "killed.log").string();
  std::string script = line + " > '" + log + "' 2>&1 & job=$!\n" +
                       "for i in $(seq 1 1200); do grep -q 'generation 2: 4 candidates' '" + log +
                       "' && break; sleep 0.1; done\n"
                       "pkill -9 -f -- '" +
                       (dir_ / "tune.yaml").string() +
                       "'\n"
                       "wait $job; exit 0\n";
  ProcessResult killed =
      r3::test::run_process({"bash", "-c", script}, std::chrono::seconds(300), kRoot);
  ASSERT_FALSE(killed.timed_out);
  std::ifstream in(log);
  std::stringstream killed_log;
  killed_log << in.rdbuf();
  ASSERT_NE(killed_log.str().find("generation 2: 4 candidates"), std::string::npos)
      << killed_log.str();
  r3::run::RunRecord before = database();
  ASSERT_GE(before.generations, 3u) << killed_log.str();

  ProcessResult resumed =
      r3::test::run_process(command(yaml, {"--resume"}), std::chrono::seconds(300), kRoot);
  ASSERT_FALSE(resumed.timed_out);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  // The generation the killed run was evaluating is proposed again, identically.
  std::smatch first;
  ASSERT_TRUE(std::regex_search(
      resumed.err, first,
      std::regex("generation (\\d+): evaluating \\d+ candidates \\(batch [0-9a-f]+\\)")))
      << resumed.err;
  EXPECT_EQ(std::stoul(first[1]), before.generations);
  if (killed_log.str().find("generation " + std::string(first[1]) + ": evaluating") !=
      std::string::npos) {
    EXPECT_NE(killed_log.str().find(first[0].str()), std::string::npos)
        << "the resumed run proposed another batch than the killed one:\n"
        << first[0] << "\n"
        << killed_log.str();
  }

  EXPECT_NE(resumed.err.find("took over the lock"), std::string::npos)
      << "the killed job's lock was not reported:\n" << resumed.err;
  EXPECT_FALSE(fs::exists(dir_ / "r3-results/run.h5.lock")) << "the lock outlived the job";
  EXPECT_EQ(dead_jobs_scratch_copies(), "") << "the killed job's scratch copies were not removed";
  r3::run::RunRecord after = database();
  EXPECT_EQ(after.sessions, 2u);
  ASSERT_GT(after.candidates.size(), before.candidates.size());
  for (std::size_t i = 0; i < before.candidates.size(); ++i)
    EXPECT_EQ(after.candidates[i], before.candidates[i]) << "candidate " << i << " changed";
  std::set<std::pair<std::string, std::string>> distinct;
  for (std::size_t i = 0; i < after.candidates.size(); ++i) {
    const auto& c = after.candidates[i];
    EXPECT_EQ(c.id, i) << "candidate ids must run without gaps";
    EXPECT_TRUE(distinct.insert({c.source.hex(), c.plan}).second)
        << "candidate " << c.id << " was evaluated twice";
  }
}

// SIGUSR1 (Slurm's warning, forwarded by mpirun) finishes the generation in flight; SIGTERM to
// every rank (Slurm at the time limit) abandons it. Either way run.h5 holds every committed
// generation, the summary says how to go on, the status is 4, no scratch copy is left, and
// --resume finishes the run.
TEST_F(MpiJob, SignalsEndTheJobCleanlyAndResumeGoesOn) {
  std::string yaml =
      "capture: demo.h5\n"
      "kernels:\n  - name: stencil2d\n    source: " +
      data("job/stencil_order.cpp") + "\nsearch:\n  batch_size: 4\n" + kShortConfirmation +
      "budget:\n  evaluations: 40\n";
  std::string line;
  for (const auto& a : command(yaml, {})) line += "'" + a + "' ";
  std::string resume_line;
  for (const auto& a : command(yaml, {"--resume"})) resume_line += "'" + a + "' ";
  auto stop = [&](const std::string& run, const std::string& at, const std::string& send,
                  const std::string& name) {
    std::string log = (dir_ / (name + ".log")).string();
    std::string script = run + " > '" + log + "' 2>&1 & job=$!\n" +
                         "for i in $(seq 1 1200); do grep -q '" + at + "' '" + log +
                         "' && break; sleep 0.1; done\n" + send + "\nwait $job; echo \"exit $?\"\n";
    ProcessResult r = r3::test::run_process({"bash", "-c", script}, std::chrono::seconds(300), kRoot);
    EXPECT_FALSE(r.timed_out);
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    return std::make_pair(r.out, text.str());
  };
  // mpirun forwards SIGUSR1 to the ranks.
  auto [usr1_exit, usr1_log] = stop(line, "generation 1: evaluating", "kill -USR1 $job", "usr1");
  EXPECT_NE(usr1_exit.find("exit 4"), std::string::npos) << usr1_exit << usr1_log;
  EXPECT_NE(usr1_log.find("stopped by SIGUSR1"), std::string::npos) << usr1_log;
  EXPECT_NE(usr1_log.find("--resume"), std::string::npos) << usr1_log;
  r3::run::RunRecord after_usr1 = database();
  EXPECT_GE(after_usr1.generations, 2u) << "the generation in flight was not finished";
  EXPECT_TRUE(after_usr1.confirmations.empty()) << "a stopped job skips the confirmation";

  // SIGTERM to the ranks themselves (not mpirun, which would kill them): the in-flight one goes.
  // Only this test's ranks: other tests may run r3-mpi at the same time.
  const std::string ranks = std::string("^") + R3_TEST_R3_MPI + " " + (dir_ / "tune.yaml").string();
  auto [term_exit, term_log] =
      stop(resume_line, "generation " + std::to_string(after_usr1.generations + 1) + ": evaluating",
           "pkill -TERM -f '" + ranks + "'", "term");
  EXPECT_NE(term_exit.find("exit 4"), std::string::npos) << term_exit << term_log;
  EXPECT_NE(term_log.find("stopped by SIGTERM"), std::string::npos) << term_log;
  EXPECT_NE(term_log.find("was abandoned"), std::string::npos) << term_log;
  r3::run::RunRecord after_term = database();
  EXPECT_EQ(after_term.sessions, 2u);
  EXPECT_GE(after_term.candidates.size(), after_usr1.candidates.size());
  for (const auto& c : after_term.candidates)
    EXPECT_EQ(c.message.find("abandoned"), std::string::npos) << "an abandoned candidate was committed";
  EXPECT_FALSE(fs::exists(dir_ / "r3-results/run.h5.lock"));
  EXPECT_EQ(dead_jobs_scratch_copies(), "") << "scratch copies left by a stopped job";

  ProcessResult resumed = r3::test::run_process(command(yaml, {"--resume"}), std::chrono::seconds(300), kRoot);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  r3::run::RunRecord finished = database();
  EXPECT_EQ(finished.sessions, 3u);
  EXPECT_GE(finished.candidates.size(), 40u);
  EXPECT_FALSE(finished.confirmations.empty()) << "the finished job did not confirm its winner";
}

// A second job on the same run database is refused, naming the first, which loses nothing.
TEST_F(MpiJob, ASecondJobOnTheSameDatabaseIsRefusedAndTheFirstLosesNothing) {
  std::string yaml =
      "capture: demo.h5\n"
      "kernels:\n  - name: stencil2d\n    source: " +
      data("job/stencil_order.cpp") + "\nsearch:\n  batch_size: 4\n" + kShortConfirmation +
      "budget:\n  evaluations: 24\n";
  std::string line;
  for (const auto& a : command(yaml, {})) line += "'" + a + "' ";
  std::string log = (dir_ / "first.log").string();
  std::string second;
  for (const auto& a : command(yaml, {"--resume"})) second += "'" + a + "' ";
  // The second job starts while the first evaluates its first generation.
  std::string script = line + " > '" + log + "' 2>&1 & job=$!\n" +
                       "for i in $(seq 1 1200); do grep -q 'generation 1: evaluating' '" + log +
                       "' && break; sleep 0.1; done\n" + second +
                       "; echo \"second exit $?\"\nwait $job; echo \"first exit $?\"\n";
  ProcessResult both = r3::test::run_process({"bash", "-c", script}, std::chrono::seconds(300), kRoot);
  ASSERT_FALSE(both.timed_out);
  std::ifstream in(log);
  std::stringstream first_log;
  first_log << in.rdbuf();
  EXPECT_NE(both.out.find("first exit 0"), std::string::npos) << first_log.str();
  EXPECT_EQ(both.out.find("second exit 0"), std::string::npos) << both.err;
  EXPECT_NE(both.err.find("another job is using the run database"), std::string::npos) << both.err;
  EXPECT_NE(both.err.find("(pid "), std::string::npos) << "the holder is not named:\n" << both.err;
  r3::run::RunRecord record = database();
  EXPECT_EQ(record.sessions, 1u);
  EXPECT_GE(record.candidates.size(), 24u) << "the first job's candidates were lost";
}

TEST_F(MpiJob, SetUpErrorsEndEveryRankWithOneMessage) {
  struct Case {
    std::string yaml;
    std::string message;
  };
  std::vector<Case> cases = {
      {"capture: demo.h5\nkernels: [stencil2d]\nbudget: {evaluations: lots}\n",
       "budget.evaluations"},
      {"capture: missing.h5\nkernels: [stencil2d]\n", "missing.h5"},
      {"capture: demo.h5\nkernels: [saxpy]\n", "kernel 'saxpy' is not in this capture"},
      {"capture: demo.h5\nkernels:\n  - name: stencil2d\n    source: " +
           data("job/stencil_order.cpp") +
           "\nllm:\n  endpoint: http://127.0.0.1:9/v1\n  model: m\n",
       "llm.endpoint: cannot reach http://127.0.0.1:9/v1"},
  };
  for (const Case& c : cases) {
    ProcessResult result = mpirun(c.yaml, {}, 120);
    ASSERT_FALSE(result.timed_out) << "the job hung on:\n" << c.yaml;
    EXPECT_EQ(result.exit_code, 1) << c.yaml << result.err;
    EXPECT_EQ(count(result.err, c.message), 1) << c.yaml << result.err;
    EXPECT_EQ(count(result.err, "error:"), 1) << c.yaml << result.err;
  }
}

}  // namespace
