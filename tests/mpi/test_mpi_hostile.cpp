// The hostile-candidate corpus through the real tuning job: r3-mpi under mpirun -n 3 with the
// host backend, its source level fed by a scripted OpenAI-compatible server on 127.0.0.1 that
// answers with the hostile kernels of tests/data/hostile (one route each) and with includes of
// files outside. The job must finish with its summary, nothing outside may change, and the API
// key must appear in no prompt, no file of the results and no log line.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "chat_server.hpp"
#include "r3/run_database.hpp"
#include "r3/version.hpp"
#include "support/files.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using r3::test::read_text_file;

constexpr const char* kKey = "sk-r3-job-secret-0123456789abcdef";

std::string data(const std::string& file) { return std::string(R3_TEST_DATA_DIR) + "/" + file; }

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(MpiHostile, LlmCandidatesAreContainedAndNoSecretLeaves) {
  if (!r3::build_has_llvm()) GTEST_SKIP() << "the host backend needs LLVM in this build";
  r3::test::TempDir dir;
  auto made = r3::test::record_demo(R3_TEST_R3, R3_TEST_EXAMPLE_STENCIL,
                                    (dir / "demo.h5").string(), 128, 2);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const fs::path outside = dir / "outside";
  fs::create_directories(outside);
  { std::ofstream(outside / "victim") << "original\n"; }
  ::chmod((outside / "victim").c_str(), 0600);
  { std::ofstream(outside / "secret.h") << "#error TOPSECRET-CONTENT-42\n"; }

  // Every route of the corpus, then includes of files outside the kernel's include path.
  const std::string hostile = read_text_file(data("hostile/stencil_hostile.cpp"));
  std::vector<std::string> answers = {
      "#include \"" + (outside / "secret.h").string() + "\"\n" + hostile,
      "#include \"/etc/shadow\"\n" + hostile};
  for (int attack = 1; attack <= 22; ++attack) {
    answers.push_back("#define ATTACK " + std::to_string(attack) + "\n#define OUTSIDE \"" +
                      (outside / "victim").string() + "\"\n#define OUTSIDE_DIR \"" +
                      outside.string() + "\"\n#define OUTSIDE_PID 1\n#define PORT 9\n" +
                      "#define UNIX_PATH \"" + (dir / "none.sock").string() + "\"\n" + hostile);
  }
  r3::bench::ChatServer server([&](const r3::bench::ReceivedRequest&, std::size_t i) {
    return r3::bench::ChatReply::completion("```cpp\n" + answers[i % answers.size()] + "\n```");
  });

  std::ofstream(dir / "tune.yaml")
      << "capture: demo.h5\nkernels:\n  - name: stencil2d\n    source: "
      << data("job/stencil_order.cpp")
      << "\nsearch:\n  batch_size: 4\n  levels:\n    compiler: {enabled: false}\n"
         "    launch: {enabled: false}\n    source: {share: 1.0, mutators: []}\n"
         "  archive: {similarity_threshold: 1.0}\n"
         "llm:\n  endpoint: "
      << server.endpoint()
      << "\n  model: hostile\n  api_key_env: R3_TEST_JOB_LLM_KEY\n  concurrency: 4\n"
         "timing:\n  candidate_timeout: 10s\n  repeats: 3\n"
         "budget:\n  evaluations: 48\n  wall_time: 150s\n";
  r3::test::ProcessResult result = r3::test::run_process(
      {R3_TEST_MPIEXEC, "-n", "3", "--oversubscribe", R3_TEST_R3_MPI,
       (dir / "tune.yaml").string()},
      std::chrono::seconds(300),
      {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
       std::string("R3_TEST_JOB_LLM_KEY=") + kKey});
  ASSERT_FALSE(result.timed_out) << result.err;
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("finished after"), std::string::npos) << result.err;

  r3::run::RunRecord run = r3::run::read_run_database(dir / "r3-results/run.h5");
  std::set<std::string> outcomes;
  std::size_t source_candidates = 0;
  for (const auto& c : run.candidates) {
    if (c.level != r3::run::CandidateLevel::source) continue;
    ++source_candidates;
    outcomes.insert(std::string(to_string(c.outcome)));
    EXPECT_NE(c.outcome, r3::Outcome::wrong_result)
        << "an attempt got out: " << c.description << ": " << c.message;
  }
  EXPECT_GE(source_candidates, 8u) << result.err;
  EXPECT_EQ(outcomes.count("crash"), 1u) << "no hostile candidate was stopped: " << result.err;
  EXPECT_NE(result.err.find("LLM answer rejected: '#include \"/etc/shadow\"'"), std::string::npos)
      << result.err;

  // Nothing outside changed.
  EXPECT_EQ(read_text_file((outside / "victim").string()), "original\n");
  struct stat st {};
  ASSERT_EQ(::stat((outside / "victim").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  std::set<std::string> entries;
  for (const auto& e : fs::directory_iterator(outside)) entries.insert(e.path().filename());
  EXPECT_EQ(entries, (std::set<std::string>{"secret.h", "victim"}));

  // No secret and no outside file's content in any prompt, result file or log line.
  for (const auto& request : server.requests()) {
    EXPECT_EQ(request.body.find(kKey), std::string::npos) << "the key went into a prompt";
    EXPECT_EQ(request.body.find("TOPSECRET"), std::string::npos) << "an outside file did";
  }
  for (const auto& e : fs::recursive_directory_iterator(dir / "r3-results")) {
    if (!e.is_regular_file()) continue;
    const std::string bytes = file_bytes(e.path());
    EXPECT_EQ(bytes.find(kKey), std::string::npos) << e.path();
    EXPECT_EQ(bytes.find("TOPSECRET"), std::string::npos) << e.path();
  }
  EXPECT_EQ(result.err.find(kKey), std::string::npos);
  EXPECT_EQ(result.out.find(kKey), std::string::npos);
  EXPECT_EQ(result.err.find("TOPSECRET"), std::string::npos);
}

}  // namespace
