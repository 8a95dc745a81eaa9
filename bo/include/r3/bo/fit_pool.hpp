// Threads that fit the optimizers' hyperparameters ahead of need. A fit is a function of the
// history alone (optimizer.cpp: the data at a fit point), so whether it ran here or in place,
// early or late, the proposals are the same; a pool only moves the work off the searching
// thread, and several optimizers' fits run at once.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace r3::bo {

class FitPool {
 public:
  explicit FitPool(std::size_t threads);
  ~FitPool();  // finishes the task each thread runs, drops the queued ones
  FitPool(const FitPool&) = delete;
  FitPool& operator=(const FitPool&) = delete;

  std::size_t threads() const { return threads_.size(); }
  // Runs `task` on a pool thread, oldest first. A dropped task is destroyed unrun: whoever
  // waits for its result must hold something that says so (optimizer.cpp's AheadFit).
  void submit(std::function<void()> task);

 private:
  void loop();

  std::mutex mutex_;  // guards queue_ and stopping_; no other lock is taken while it is held
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace r3::bo
