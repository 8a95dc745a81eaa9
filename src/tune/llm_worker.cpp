#include "llm_worker.hpp"

#include <chrono>

#include "r3/log.hpp"

namespace r3::tune {

LlmWorker::LlmWorker(const evolve::LlmOptions& config, double budget)
    : client_(std::make_unique<evolve::LlmClient>(config, budget)), thread_([this] { loop(); }) {}

LlmWorker::~LlmWorker() {
  stop_ = true;
  thread_.join();
}

void LlmWorker::submit(std::vector<evolve::ChatRequest> requests) {
  std::lock_guard lock(mutex_);
  outstanding_ += requests.size();
  for (auto& r : requests) queued_.push_back(std::move(r));
}

std::vector<evolve::ChatResult> LlmWorker::take() {
  std::lock_guard lock(mutex_);
  std::vector<evolve::ChatResult> out = std::move(done_);
  done_.clear();
  outstanding_ -= out.size();
  return out;
}

std::size_t LlmWorker::outstanding() const {
  std::lock_guard lock(mutex_);
  return outstanding_;
}

evolve::Usage LlmWorker::usage() const {
  std::lock_guard lock(mutex_);
  return usage_;
}

bool LlmWorker::budget_exhausted() const {
  std::lock_guard lock(mutex_);
  return exhausted_;
}

void LlmWorker::loop() {
  while (!stop_) {
    std::vector<evolve::ChatRequest> fresh;
    {
      std::lock_guard lock(mutex_);
      fresh.swap(queued_);
    }
    for (auto& r : fresh) client_->submit(std::move(r));
    // Short waits keep shutdown and new submissions prompt; the client sleeps in poll().
    std::vector<evolve::ChatResult> finished = client_->poll(std::chrono::milliseconds(50));
    if (finished.empty() && !client_->busy())
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard lock(mutex_);
    for (auto& f : finished) done_.push_back(std::move(f));
    usage_ = client_->usage();
    exhausted_ = client_->budget_exhausted();
  }
}

}  // namespace r3::tune
