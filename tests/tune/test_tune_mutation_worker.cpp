// The built-in mutators on rank 0's background threads (src/tune/mutation_worker.hpp): a parent's
// mutations are the ones evolve::mutate makes, whether they were asked for ahead, taken at once,
// or asked for ahead and then dropped from a full queue.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "mutation_worker.hpp"
#include "r3/hash.hpp"
#include "support/files.hpp"

namespace r3::tune {
namespace {

MutationRequest request_for(const std::string& text, std::vector<std::string> mutators) {
  MutationRequest r;
  r.parent = hash_string(text);
  r.text = text;
  r.file_name = "stencil.cpp";
  r.entry = "stencil2d";
  r.language = evolve::SourceLanguage::cpp;
  r.mutators = std::move(mutators);
  return r;
}

std::vector<std::string> sources_of(const evolve::MutationReport& report) {
  std::vector<std::string> out;
  for (const evolve::Mutation& m : report.mutations) out.push_back(m.mutator + "|" + m.source);
  return out;
}

// What the mutators make of `r` alone, on the caller's thread.
std::vector<std::string> made_alone(const MutationRequest& r) {
  return sources_of(
      evolve::mutate(r.text, r.file_name, r.entry, r.language, r.mutators, r.context));
}

std::string demo_source(const std::string& file) {
  return test::read_text_file(std::string(R3_TEST_SOURCE_DIR) + "/examples/demo/" + file);
}

TEST(MutationWorker, MakesWhatTheMutatorsMakeWhetherAskedAheadOrNot) {
  if (!evolve::mutators_available()) GTEST_SKIP() << "r3 was built without LLVM: no mutators";
  const std::string text = demo_source("stencil.cpp");
  const MutationRequest request = request_for(text, {"restrict", "unroll", "hoist_loads"});
  const auto direct = made_alone(request);
  ASSERT_FALSE(direct.empty()) << "the demo's stencil has mutations";

  MutationWorker taken_at_once;
  EXPECT_EQ(sources_of(taken_at_once.take(request)), direct);
  EXPECT_EQ(taken_at_once.made_ahead(), 0u);

  MutationWorker ahead;
  ahead.prefetch(request);
  ahead.prefetch(request);  // once per parent
  EXPECT_EQ(sources_of(ahead.take(request)), direct);
  EXPECT_LE(ahead.made_ahead(), 1u);
  // Taken, it is forgotten: asked for again, it is made again, the same.
  EXPECT_EQ(sources_of(ahead.take(request)), direct);
}

TEST(MutationWorker, AParentDroppedFromAFullQueueIsMadeWhenTaken) {
  if (!evolve::mutators_available()) GTEST_SKIP() << "r3 was built without LLVM: no mutators";
  const std::string text = demo_source("stencil.cpp");
  std::vector<MutationRequest> requests;
  for (std::size_t i = 0; i < MutationWorker::kQueued + 3; ++i)
    requests.push_back(request_for(text + "// variant " + std::to_string(i) + "\n", {"restrict"}));
  MutationWorker worker;
  for (const MutationRequest& r : requests) worker.prefetch(r);
  // The oldest requests were dropped (unless the thread had started them): each is still made.
  for (std::size_t i : {std::size_t{0}, std::size_t{1}, requests.size() - 1}) {
    const auto expected = made_alone(requests[i]);
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(sources_of(worker.take(requests[i])), expected) << "request " << i;
  }
}

// While the caller waits for a parent the worker has not made yet, it is called back every few
// milliseconds (the job hands out work meanwhile), and what it takes is what the mutators make.
TEST(MutationWorker, TheCallerKeepsWorkingWhileItWaits) {
  if (!evolve::mutators_available()) GTEST_SKIP() << "r3 was built without LLVM: no mutators";
  const std::string text = demo_source("stencil.cpp");
  // Functions besides the kernel, which Clang parses and compiles with every rewrite: long
  // enough a wait to be called back through on any machine.
  std::string padded = text;
  for (int i = 0; i < 400; ++i)
    padded += "\nfloat pad" + std::to_string(i) +
              "(const float* a, int n) { float s = 0; for (int j = 0; j < n; ++j) s += a[j] * " +
              std::to_string(i) + "; return s; }";
  const MutationRequest request = request_for(padded + "\n", {"restrict", "unroll", "hoist_loads"});
  const auto direct = made_alone(request);
  ASSERT_FALSE(direct.empty());
  MutationWorker worker;
  std::size_t calls = 0;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(sources_of(worker.take(request, [&] { ++calls; })), direct);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Clang parses and compiles every rewrite: tens of milliseconds at least, many slices.
  ASSERT_GT(waited, 0.02) << "the mutators took no time: nothing to wait through";
  EXPECT_GE(calls, 2u) << "waited " << waited << " s without calling back";
  EXPECT_GT(worker.waited_seconds(), 0.5 * waited);
  EXPECT_LE(worker.waited_seconds(), waited);
}

// Several threads mutate different parents at once, C++ and CUDA (whose headers' precompiled
// header the first CUDA parse makes), and each parent gets what the mutators make alone.
TEST(MutationWorker, SeveralThreadsMakeWhatOneMakes) {
  if (!evolve::mutators_available()) GTEST_SKIP() << "r3 was built without LLVM: no mutators";
  const std::string cpp = demo_source("stencil.cpp");
  const std::string cuda = demo_source("stencil.cu");
  std::vector<MutationRequest> requests;
  for (int i = 0; i < 4; ++i) {
    requests.push_back(request_for(cpp + "// variant " + std::to_string(i) + "\n",
                                   {"restrict", "unroll", "hoist_loads"}));
    MutationRequest r = request_for(cuda + "// variant " + std::to_string(i) + "\n",
                                    {"restrict", "ldg", "launch_bounds"});
    r.file_name = "stencil.cu";
    r.language = evolve::SourceLanguage::cuda;
    requests.push_back(std::move(r));
  }
  std::vector<std::vector<std::string>> alone;
  for (const MutationRequest& r : requests)
    alone.push_back(made_alone(r));
  MutationWorker worker(4);
  for (const MutationRequest& r : requests) worker.prefetch(r);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    ASSERT_FALSE(alone[i].empty()) << "request " << i << " has no mutations";
    EXPECT_EQ(sources_of(worker.take(requests[i])), alone[i]) << "request " << i;
  }
}

// A source just proposed is mutated speculatively when the threads have time: taken later, its
// mutations are there without a wait, and are what the mutators make. A speculative request
// dropped from its full queue is still made when taken, and one asked for again as likely is made
// like any other.
TEST(MutationWorker, SpeculativeRequestsAreMadeWhenThereIsTime) {
  if (!evolve::mutators_available()) GTEST_SKIP() << "r3 was built without LLVM: no mutators";
  const std::string text = demo_source("stencil.cpp");
  const MutationRequest request = request_for(text, {"restrict", "unroll", "hoist_loads"});
  const auto direct = made_alone(request);
  ASSERT_FALSE(direct.empty());
  {
    MutationWorker worker;
    worker.prefetch(request, MutationWorker::Need::speculative);
    // Made in tens of milliseconds; a few seconds leave room on a loaded machine.
    std::this_thread::sleep_for(std::chrono::seconds(3));
    EXPECT_EQ(sources_of(worker.take(request)), direct);
    EXPECT_EQ(worker.made_ahead(), 1u);
    EXPECT_EQ(worker.waited_seconds(), 0.0);
  }
  std::vector<MutationRequest> requests;
  for (std::size_t i = 0; i < MutationWorker::kSpeculative + 3; ++i)
    requests.push_back(request_for(text + "// variant " + std::to_string(i) + "\n", {"restrict"}));
  MutationWorker worker;
  for (const MutationRequest& r : requests) worker.prefetch(r, MutationWorker::Need::speculative);
  worker.prefetch(requests[1], MutationWorker::Need::likely);
  for (std::size_t i : {std::size_t{0}, std::size_t{1}, requests.size() - 1}) {
    const auto expected = made_alone(requests[i]);
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(sources_of(worker.take(requests[i])), expected) << "request " << i;
  }
}

}  // namespace
}  // namespace r3::tune
