#include "dispatcher.hpp"

#include <chrono>

#include "r3/error.hpp"
#include "r3/log.hpp"
#include "r3/secrets.hpp"

namespace r3::tune {

namespace {
// How long the courier waits for a message before it looks at the queues again: new work waits
// at most this long for an evaluator with room (candidates take milliseconds at the least).
constexpr double kCourierPollS = 0.002;

// Candidate text goes no further with a secret in it: not into run.h5, the results, the log or
// a prompt.
void redact(replay::Evaluation& e) {
  e.message = redact_secrets(std::move(e.message));
  e.run.message = redact_secrets(std::move(e.run.message));
}
}  // namespace

Dispatcher::Dispatcher(const Collectives& world, Evaluator* local,
                       const std::map<Hash128, std::string>& sources,
                       std::vector<std::size_t> depths)
    : world_(world), local_(local), sources_(sources), depths_(std::move(depths)) {
  const std::size_t evaluators = local ? 1 : static_cast<std::size_t>(world.size() - 1);
  depths_.resize(evaluators, 2);
  for (std::size_t& d : depths_) d = std::max<std::size_t>(1, d);
  own_.resize(evaluators);
  outstanding_.assign(evaluators, 0);
  sent_sources_.resize(evaluators);
  if (!local_ && world_.serves_from_any_thread()) courier_ = std::thread([this] { courier(); });
}

Dispatcher::~Dispatcher() {
  if (!courier_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  courier_.join();
}

void Dispatcher::add(const std::vector<protocol::WorkItem>& items) {
  std::lock_guard lock(mutex_);
  shared_.insert(shared_.end(), items.begin(), items.end());
}

void Dispatcher::add_to_every_evaluator(const std::vector<protocol::WorkItem>& items) {
  std::lock_guard lock(mutex_);
  for (auto& own : own_) own.insert(own.end(), items.begin(), items.end());
}

std::size_t Dispatcher::queued() const {
  std::lock_guard lock(mutex_);
  std::size_t n = shared_.size();
  for (const auto& own : own_) n += own.size();
  return n;
}

std::size_t Dispatcher::outstanding() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (std::size_t o : outstanding_) n += o;
  return n;
}

double Dispatcher::busy_seconds() const {
  std::lock_guard lock(mutex_);
  return busy_seconds_;
}

Dispatcher::Outgoing Dispatcher::work_to_hand_out() {
  Outgoing out;
  for (std::size_t e = 0; e < own_.size(); ++e) {
    protocol::Work work;
    while (outstanding_[e] < depths_[e] && (!own_[e].empty() || !shared_.empty())) {
      auto& from = own_[e].empty() ? shared_ : own_[e];
      protocol::WorkItem item = std::move(from.front());
      from.pop_front();
      if (sent_sources_[e].insert(item.source).second)
        work.sources[item.source] = sources_.at(item.source);
      work.items.push_back(std::move(item));
      ++outstanding_[e];
    }
    if (!work.items.empty()) out.emplace_back(static_cast<int>(e) + 1, protocol::encode(work));
  }
  return out;
}

void Dispatcher::send(Outgoing messages) {
  for (auto& [rank, bytes] : messages) world_.send(rank, std::move(bytes));
}

void Dispatcher::serve(double timeout_s) {
  Outgoing out;
  {
    std::lock_guard lock(mutex_);
    out = work_to_hand_out();
  }
  send(std::move(out));
  std::optional<Collectives::Message> message = world_.receive(timeout_s);
  if (!message) return;
  protocol::Message m = protocol::decode(message->bytes);
  auto* done = std::get_if<protocol::Done>(&m);
  if (!done) {
    log::warning("rank ", message->from, " sent a message out of turn; ignored");
    return;
  }
  replay::Evaluation& e = done->evaluation;
  redact(e);
  {
    std::lock_guard lock(mutex_);
    const std::size_t evaluator = static_cast<std::size_t>(message->from - 1);
    if (evaluator < outstanding_.size() && outstanding_[evaluator] > 0) --outstanding_[evaluator];
    if (!done->abandoned) busy_seconds_ += e.seconds;
    results_.push_back(Finished{done->id, std::move(e), message->from, done->abandoned});
    out = work_to_hand_out();
  }
  result_came_.notify_all();
  send(std::move(out));
}

void Dispatcher::courier() {
  try {
    while (true) {
      {
        std::lock_guard lock(mutex_);
        if (quit_) return;
        if (stop_status_) break;
      }
      serve(kCourierPollS);
    }
    int status = 0;
    {
      std::lock_guard lock(mutex_);
      status = *stop_status_;
    }
    stop_evaluators(status);
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      courier_failed_ = std::current_exception();
    }
    result_came_.notify_all();
  }
}

std::optional<Dispatcher::Finished> Dispatcher::take_result() {
  if (courier_failed_) std::rethrow_exception(courier_failed_);
  if (results_.empty()) return std::nullopt;
  Finished f = std::move(results_.front());
  results_.pop_front();
  return f;
}

std::optional<Dispatcher::Finished> Dispatcher::next(double timeout_s) {
  if (local_) {
    auto& from = own_[0].empty() ? shared_ : own_[0];
    if (from.empty()) return std::nullopt;
    protocol::WorkItem item = std::move(from.front());
    from.pop_front();
    local_->hold({{item.source, sources_.at(item.source)}});
    // The next few compile while this one runs.
    std::vector<protocol::WorkItem> ahead;
    for (std::size_t i = 0; i + 1 < depths_[0] && i < from.size(); ++i) {
      local_->hold({{from[i].source, sources_.at(from[i].source)}});
      ahead.push_back(from[i]);
    }
    local_->compile_ahead(ahead);
    replay::Evaluation e = local_->evaluate(item);
    redact(e);
    busy_seconds_ += e.seconds;
    return Finished{item.id, std::move(e), 0, false};
  }
  if (courier_.joinable()) {
    std::unique_lock lock(mutex_);
    result_came_.wait_for(lock, std::chrono::duration<double>(std::max(0.0, timeout_s)),
                          [&] { return !results_.empty() || courier_failed_; });
    return take_result();
  }
  {
    std::lock_guard lock(mutex_);
    if (auto f = take_result()) return f;
  }
  serve(timeout_s);
  std::lock_guard lock(mutex_);
  return take_result();
}

void Dispatcher::stop(int status) {
  if (stopped_ || local_) return;
  stopped_ = true;
  if (!courier_.joinable()) {
    stop_evaluators(status);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    stop_status_ = status;
  }
  courier_.join();
  if (!courier_failed_) return;
  // The courier failed while serving: the evaluators still wait to be told, and are, if MPI
  // still lets this thread; what stopped the courier is what the job reports.
  if (!stop_sent_) {
    try {
      stop_evaluators(status);
    } catch (const std::exception& e) {
      log::warning("the evaluators could not be told to stop: ", e.what());
    }
  }
  std::rethrow_exception(courier_failed_);
}

void Dispatcher::stop_evaluators(int status) {
  stop_sent_ = true;
  for (std::size_t e = 0; e < own_.size(); ++e)
    world_.send(static_cast<int>(e) + 1, protocol::encode(protocol::Stop{status}));
  std::size_t running = own_.size();
  auto since = std::chrono::steady_clock::now();
  bool said = false;
  while (running > 0) {
    auto message = world_.receive(1.0);
    if (message && std::holds_alternative<protocol::Stopped>(protocol::decode(message->bytes)))
      --running;
    if (!said && std::chrono::steady_clock::now() - since > std::chrono::seconds(10)) {
      log::info("waiting for ", running, " evaluator(s) to finish the candidate they run");
      said = true;
    }
  }
}

}  // namespace r3::tune
