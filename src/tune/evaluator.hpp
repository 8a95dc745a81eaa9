// An evaluator: a sandbox that runs candidates, and the source texts it has been sent. Ranks
// 1..N each run one (run_evaluator); a job of one process has rank 0 run one itself.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "protocol.hpp"
#include "r3/replay/sandbox.hpp"
#include "r3/tune/collectives.hpp"

namespace r3::tune {

class Evaluator {
 public:
  // `gpu`: which of the node's GPUs the sandbox uses (its node-local rank; the child takes it
  // modulo the GPUs it sees). `node_size`: the processes on this node, which share its cores.
  Evaluator(const protocol::EvaluatorSetup& setup, const std::filesystem::path& capture, int rank,
            int gpu, int node_size);
  ~Evaluator();

  // Keeps source texts that work items name by hash.
  void hold(const std::map<Hash128, std::string>& sources);
  // Hands items that evaluate() will be asked for to the sandbox's compile threads. While a
  // candidate runs (from evaluate()'s while_running), `only_if_room`: false when the pipe had
  // none, and the items are to be handed over again after the run.
  bool compile_ahead(const std::vector<protocol::WorkItem>& items, bool only_if_room = false);
  // Runs one candidate; its failures are the evaluation's outcome (a sandbox that cannot be
  // restarted, or an item naming a source it was not sent, makes it a crash). `while_running`:
  // replay::Sandbox::evaluate's.
  replay::Evaluation evaluate(const protocol::WorkItem& item,
                              const std::function<bool()>& while_running = {});
  std::size_t restarts() const;
  // Candidates worth holding at once: one running, one per compile thread, one on its way.
  std::size_t depth() const;

 private:
  replay::Request request_of(const protocol::WorkItem& item) const;

  std::unique_ptr<replay::Sandbox> sandbox_;
  std::map<Hash128, std::string> sources_;
  std::size_t compile_threads_ = 0;
};

// An evaluator rank's whole life after the job's set-up was broadcast: its scratch copy of the
// capture, its sandbox, then work until rank 0 says stop. Returns the job's exit status.
int run_evaluator(const Collectives& world);

}  // namespace r3::tune
