// Compiling ahead: an evaluator hands its whole share of a generation to a few compile threads,
// then runs the candidates one after the other, so that a GPU is not idle while the next
// candidates compile. A backend's compile() may be called from several threads at once (its
// run() only from one).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "r3/replay/backend.hpp"

namespace r3::replay {

class CompilePool {
 public:
  // `threads` == 0: nothing is compiled ahead; get() compiles on the calling thread.
  CompilePool(Backend& backend, unsigned threads);
  ~CompilePool();  // finishes the compiles under way, drops those still queued
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // Queues a variant unless it is queued, compiling or compiled already.
  void submit(const Variant& variant);

  // The variant compiled: taken from the pool when a thread compiled it, waited for while one
  // is compiling it, and compiled on the calling thread when it is still queued or was never
  // submitted, so a candidate never waits behind the compiles of others. A compile that threw
  // throws here.
  Compiled get(const Variant& variant);

  unsigned threads() const { return static_cast<unsigned>(workers_.size()); }
  std::size_t compiled_ahead() const;  // compiles the threads finished (for reports and tests)

 private:
  enum class State { queued, compiling, done };
  struct Task {
    Variant variant;
    State state = State::queued;
    Compiled result;
    std::exception_ptr error;
  };

  void work();

  Backend& backend_;
  mutable std::mutex mutex_;
  std::condition_variable queued_;
  std::condition_variable finished_;
  std::map<Hash128, Task> tasks_;  // by Variant::key()
  std::deque<Hash128> queue_;
  std::vector<std::thread> workers_;
  std::size_t compiled_ahead_ = 0;
  bool stopping_ = false;
};

}  // namespace r3::replay
