// The LLM client on a background thread of rank 0, so that requests for generation g+1 are in
// flight while generation g is evaluated, and the main thread (the only one using MPI) never
// waits for an endpoint.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "r3/evolve/llm_client.hpp"

namespace r3::tune {

class LlmWorker {
 public:
  LlmWorker(const evolve::LlmOptions& config, double budget);
  ~LlmWorker();  // abandons what is still in flight
  LlmWorker(const LlmWorker&) = delete;
  LlmWorker& operator=(const LlmWorker&) = delete;

  void submit(std::vector<evolve::ChatRequest> requests);
  std::vector<evolve::ChatResult> take();  // the answers that arrived since the last call
  std::size_t outstanding() const;         // submitted, not yet taken
  evolve::Usage usage() const;
  bool budget_exhausted() const;

 private:
  void loop();

  std::unique_ptr<evolve::LlmClient> client_;  // used by the worker thread only
  mutable std::mutex mutex_;
  std::vector<evolve::ChatRequest> queued_;
  std::vector<evolve::ChatResult> done_;
  std::size_t outstanding_ = 0;
  evolve::Usage usage_;
  bool exhausted_ = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace r3::tune
