#include "r3/replay/compile_pool.hpp"

#include "compile_worker.hpp"

namespace r3::replay {

CompilePool::CompilePool(Backend& backend, unsigned threads, std::filesystem::path worker_program)
    : backend_(backend) {
  if (!worker_program.empty()) context_ = backend.translation_context();
  if (!context_.empty()) worker_program_ = std::move(worker_program);
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

CompilePool::~CompilePool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  queued_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void CompilePool::submit(const Variant& variant) {
  if (workers_.empty()) return;
  const Hash128 key = variant.key();
  {
    std::lock_guard lock(mutex_);
    auto [it, added] = tasks_.try_emplace(key);
    if (!added) return;
    it->second.variant = variant;
    queue_.push_back(key);
  }
  queued_.notify_one();
}

Compiled CompilePool::get(const Variant& variant) {
  const Hash128 key = variant.key();
  std::unique_lock lock(mutex_);
  auto it = tasks_.find(key);
  if (it == tasks_.end() || it->second.state == State::queued) {
    if (it != tasks_.end()) {
      // Taken from the queue: the worker that pops it finds no task and moves on.
      tasks_.erase(it);
    }
    lock.unlock();
    return backend_.compile(variant);
  }
  finished_.wait(lock, [&] { return it->second.state == State::done; });
  Task task = std::move(it->second);
  tasks_.erase(it);
  if (task.error) std::rethrow_exception(task.error);
  return task.result;
}

std::size_t CompilePool::compiled_ahead() const {
  std::lock_guard lock(mutex_);
  return compiled_ahead_;
}

void CompilePool::work() {
  std::unique_ptr<CompileWorker> worker;
  if (!worker_program_.empty()) worker = std::make_unique<CompileWorker>(worker_program_);
  while (true) {
    std::unique_lock lock(mutex_);
    queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const Hash128 key = queue_.front();
    queue_.pop_front();
    auto it = tasks_.find(key);
    if (it == tasks_.end() || it->second.state != State::queued) continue;
    it->second.state = State::compiling;
    const Variant variant = it->second.variant;
    lock.unlock();
    Compiled result;
    std::exception_ptr error;
    try {
      if (worker && backend_.translates(variant))
        result = backend_.compile_translated(
            variant, worker->translate(std::string(backend_.name()), context_, variant));
      else
        result = backend_.compile(variant);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    // get() may not erase a task while it compiles, so `key` still names it.
    Task& task = tasks_.at(key);
    task.result = std::move(result);
    task.error = error;
    task.state = State::done;
    ++compiled_ahead_;
    lock.unlock();
    finished_.notify_all();
  }
}

}  // namespace r3::replay
