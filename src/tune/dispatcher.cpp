#include "dispatcher.hpp"

#include <chrono>

#include "r3/error.hpp"
#include "r3/log.hpp"
#include "r3/secrets.hpp"

namespace r3::tune {

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
}

void Dispatcher::add(const std::vector<protocol::WorkItem>& items) {
  shared_.insert(shared_.end(), items.begin(), items.end());
}

void Dispatcher::add_to_every_evaluator(const std::vector<protocol::WorkItem>& items) {
  for (auto& own : own_) own.insert(own.end(), items.begin(), items.end());
}

std::size_t Dispatcher::queued() const {
  std::size_t n = shared_.size();
  for (const auto& own : own_) n += own.size();
  return n;
}

std::size_t Dispatcher::outstanding() const {
  std::size_t n = 0;
  for (std::size_t o : outstanding_) n += o;
  return n;
}

void Dispatcher::hand_out() {
  if (local_) return;  // the local evaluator takes its work in next()
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
    if (!work.items.empty()) world_.send(static_cast<int>(e) + 1, protocol::encode(work));
  }
}

Dispatcher::Finished Dispatcher::finished(std::uint64_t id, replay::Evaluation e, int evaluator,
                                          bool abandoned) {
  // Candidate text goes no further with a secret in it: not into run.h5, the results, the log
  // or a prompt.
  e.message = redact_secrets(std::move(e.message));
  e.run.message = redact_secrets(std::move(e.run.message));
  if (!abandoned) busy_seconds_ += e.seconds;
  return Finished{id, std::move(e), evaluator, abandoned};
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
    return finished(item.id, local_->evaluate(item), 0, false);
  }
  hand_out();
  while (auto message = world_.receive(timeout_s)) {
    protocol::Message m = protocol::decode(message->bytes);
    auto* done = std::get_if<protocol::Done>(&m);
    if (!done) {
      log::warning("rank ", message->from, " sent a message out of turn; ignored");
      continue;
    }
    const std::size_t e = static_cast<std::size_t>(message->from - 1);
    if (e < outstanding_.size() && outstanding_[e] > 0) --outstanding_[e];
    hand_out();
    return finished(done->id, std::move(done->evaluation), message->from, done->abandoned);
  }
  return std::nullopt;
}

void Dispatcher::stop(int status) {
  if (stopped_ || local_) return;
  stopped_ = true;
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
