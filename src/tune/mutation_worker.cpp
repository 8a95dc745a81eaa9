#include "mutation_worker.hpp"

#include <algorithm>

namespace r3::tune {

MutationWorker::MutationWorker(std::size_t threads) {
  for (std::size_t i = 0; i < std::max<std::size_t>(1, threads); ++i)
    threads_.emplace_back([this] { loop(); });
}

MutationWorker::~MutationWorker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    queued_.clear();
  }
  changed_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void MutationWorker::prefetch(MutationRequest request) {
  {
    std::lock_guard lock(mutex_);
    if (!made_.try_emplace(request.parent).second) return;
    queued_.push_front(std::move(request));
    if (queued_.size() > kQueued) {
      made_.erase(queued_.back().parent);
      queued_.pop_back();
    }
  }
  changed_.notify_all();
}

evolve::MutationReport MutationWorker::take(MutationRequest request,
                                            const std::function<void()>& while_waiting) {
  const Hash128 parent = request.parent;
  std::unique_lock lock(mutex_);
  auto it = made_.find(parent);
  if (it == made_.end()) {
    made_.try_emplace(parent);
    queued_.push_front(std::move(request));
    changed_.notify_all();
  } else {
    auto queued = std::find_if(queued_.begin(), queued_.end(),
                               [&](const MutationRequest& r) { return r.parent == parent; });
    if (queued == queued_.end()) {
      ++made_ahead_;  // made, or being made
    } else {
      MutationRequest first = std::move(*queued);
      queued_.erase(queued);
      queued_.push_front(std::move(first));
    }
  }
  // Waits in slices, the lock released for `while_waiting` between them.
  const auto began = std::chrono::steady_clock::now();
  bool waited = false;
  while (!changed_.wait_for(lock, kWaitSlice, [&] { return made_.at(parent).has_value(); })) {
    waited = true;
    if (!while_waiting) continue;
    lock.unlock();
    while_waiting();
    lock.lock();
  }
  if (waited)
    waited_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  Made made = std::move(*made_.at(parent));
  made_.erase(parent);
  lock.unlock();
  if (made.error) std::rethrow_exception(made.error);
  return std::move(made.report);
}

std::size_t MutationWorker::made_ahead() const {
  std::lock_guard lock(mutex_);
  return made_ahead_;
}

double MutationWorker::waited_seconds() const {
  std::lock_guard lock(mutex_);
  return waited_seconds_;
}

void MutationWorker::loop() {
  while (true) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stopping_ || !queued_.empty(); });
    if (stopping_) return;
    MutationRequest request = std::move(queued_.front());
    queued_.pop_front();
    lock.unlock();
    Made made;
    try {
      made.report = evolve::mutate(request.text, request.file_name, request.entry, request.language,
                                   request.mutators, request.context);
    } catch (...) {
      made.error = std::current_exception();
    }
    lock.lock();
    // Still asked for: a request is dropped only while it is queued.
    made_.at(request.parent) = std::move(made);
    lock.unlock();
    changed_.notify_all();
  }
}

}  // namespace r3::tune
