#include "mutation_worker.hpp"

#include <algorithm>
#include <optional>

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
    speculative_.clear();
  }
  changed_.notify_all();
  for (std::thread& t : threads_) t.join();
}

namespace {

// Takes the request for `parent` out of `queue`, if it waits there.
std::optional<MutationRequest> take_out(std::deque<MutationRequest>& queue, const Hash128& parent) {
  auto it = std::find_if(queue.begin(), queue.end(),
                         [&](const MutationRequest& r) { return r.parent == parent; });
  if (it == queue.end()) return std::nullopt;
  MutationRequest request = std::move(*it);
  queue.erase(it);
  return request;
}

}  // namespace

void MutationWorker::forget_speculative(const Hash128& parent) {
  std::erase(speculative_made_, parent);
}

void MutationWorker::push_front(std::deque<MutationRequest>& queue, MutationRequest request,
                                std::size_t most) {
  queue.push_front(std::move(request));
  if (queue.size() > most) {
    made_.erase(queue.back().parent);
    likely_.erase(queue.back().parent);
    queue.pop_back();
  }
}

void MutationWorker::prefetch(MutationRequest request, Need need) {
  {
    std::lock_guard lock(mutex_);
    if (need == Need::likely) {
      likely_.insert(request.parent);
      forget_speculative(request.parent);
    }
    asked_.insert(request.parent);
    if (!made_.try_emplace(request.parent).second) {
      // Asked for before: a speculative request still waiting becomes a likely one.
      if (need == Need::speculative) return;
      std::optional<MutationRequest> waiting = take_out(speculative_, request.parent);
      if (!waiting) return;
      push_front(queued_, std::move(*waiting), kQueued);
    } else if (need == Need::likely) {
      push_front(queued_, std::move(request), kQueued);
    } else {
      push_front(speculative_, std::move(request), kSpeculative);
    }
  }
  changed_.notify_all();
}

evolve::MutationReport MutationWorker::take(MutationRequest request,
                                            const std::function<void()>& while_waiting) {
  const Hash128 parent = request.parent;
  std::unique_lock lock(mutex_);
  likely_.insert(parent);
  asked_.insert(parent);
  forget_speculative(parent);
  if (made_.contains(parent)) {
    std::optional<MutationRequest> waiting = take_out(queued_, parent);
    if (!waiting) waiting = take_out(speculative_, parent);
    if (waiting) {
      queued_.push_front(std::move(*waiting));  // next (nothing is dropped: it was queued)
    } else {
      ++made_ahead_;  // made, or being made
    }
  }
  // Waits in slices, the lock released for `while_waiting` between them.
  const auto began = std::chrono::steady_clock::now();
  bool waited = false;
  // Ready when made. Not asked for before, or forgotten since (an entry goes only while queued
  // behind newer ones, or once made speculatively and not asked for): asked for now, first.
  auto ready = [&] {
    if (auto found = made_.find(parent); found != made_.end()) return found->second.has_value();
    made_.try_emplace(parent);
    queued_.push_front(request);
    changed_.notify_all();
    return false;
  };
  while (!changed_.wait_for(lock, kWaitSlice, ready)) {
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
  likely_.erase(parent);
  lock.unlock();
  if (made.error) std::rethrow_exception(made.error);
  return std::move(made.report);
}

bool MutationWorker::asked_for(const Hash128& parent) const {
  std::lock_guard lock(mutex_);
  return asked_.contains(parent);
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
    changed_.wait(lock, [&] { return stopping_ || !queued_.empty() || !speculative_.empty(); });
    if (stopping_) return;
    const bool speculative = queued_.empty();
    std::deque<MutationRequest>& from = speculative ? speculative_ : queued_;
    MutationRequest request = std::move(from.front());
    from.pop_front();
    lock.unlock();
    Made made;
    try {
      made.report = evolve::mutate(request.text, request.file_name, request.entry, request.language,
                                   request.mutators, request.context);
    } catch (...) {
      made.error = std::current_exception();
    }
    lock.lock();
    // A request is dropped only while it is queued, so its entry is still there; should it not
    // be, what was made is not wanted any more.
    if (auto entry = made_.find(request.parent); entry != made_.end())
      entry->second = std::move(made);
    if (speculative && !likely_.contains(request.parent)) {
      speculative_made_.push_back(request.parent);
      while (speculative_made_.size() > kSpeculativeKept) {
        const Hash128 oldest = speculative_made_.front();
        speculative_made_.pop_front();
        // Forgotten if made and not asked for since (then it waits for its take()); an entry
        // queued or being made again is left alone.
        auto entry = made_.find(oldest);
        if (entry != made_.end() && entry->second.has_value() && !likely_.contains(oldest))
          made_.erase(entry);
      }
    }
    lock.unlock();
    changed_.notify_all();
  }
}

}  // namespace r3::tune
