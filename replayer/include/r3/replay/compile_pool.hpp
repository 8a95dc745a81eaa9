// Compiling ahead: an evaluator hands the candidates it holds to a few compile threads, then
// runs them one after the other, so that a GPU is not idle while the next candidates compile. A
// backend's compile() may be called from several threads at once (its run() only from one).
// Given a worker program, each thread has a compile worker process translate the variants the
// backend can translate elsewhere (compile_worker.hpp: NVRTC serialises one process's compiles)
// and only loads the result itself.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "r3/replay/backend.hpp"

namespace r3::replay {

class CompilePool {
 public:
  // `threads` == 0: nothing is compiled ahead; get() compiles on the calling thread.
  // `worker_program`: `r3-sandbox` (find_sandbox_helper()), run as `--compile-worker` by each
  // thread; empty: the threads compile in this process.
  CompilePool(Backend& backend, unsigned threads, std::filesystem::path worker_program = {});
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
  bool in_processes() const { return !worker_program_.empty(); }
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
  std::filesystem::path worker_program_;  // empty: compiles in this process
  std::string context_;                   // the backend's translation context
  mutable std::mutex mutex_;
  std::condition_variable queued_;
  std::condition_variable finished_;
  std::map<Hash128, Task> tasks_;  // by Variant::key()
  std::deque<Hash128> queue_;
  std::vector<std::thread> workers_;
  std::size_t compiled_ahead_ = 0;
  bool stopping_ = false;
};

// A compile worker's side (`r3-sandbox --compile-worker`): translates the variants it is sent
// on `in_fd` and answers on `out_fd` until the pipe closes; returns its exit status.
int compile_worker_main(int in_fd, int out_fd);

}  // namespace r3::replay
