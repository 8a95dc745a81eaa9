#include "confirmation.hpp"

#include <algorithm>
#include <set>
#include <tuple>

#include "clock.hpp"
#include "r3/error.hpp"
#include "r3/log.hpp"
#include "r3/replay/wire.hpp"
#include "region_names.hpp"
#include "results.hpp"
#include "stop_signals.hpp"

namespace r3::tune {
namespace {

// Keeps the code an evaluation sent back, once per candidate (every evaluator sends it; a
// resumed run confirms again).
void keep_code(run::RunRecord& record, std::uint64_t candidate, std::uint32_t kernel,
               const replay::Evaluation& evaluation) {
  if (!evaluation.code || evaluation.outcome != replay::Outcome::ok) return;
  for (const run::CodeRecord& kept : record.codes)
    if (kept.candidate == candidate) return;
  const replay::Backend::LoadableCode& code = *evaluation.code;
  record.codes.push_back(
      {candidate, kernel, code.architecture, code.toolkit, code.function, code.bytes});
}

}  // namespace

void ConfirmationSets::take(const run::RunRecord& record) {
  for (; taken_ < record.candidates.size(); ++taken_) {
    const run::CandidateRecord& c = record.candidates[taken_];
    if (c.kernel >= kernels_.size() || c.outcome != Outcome::ok || c.configuration.empty())
      continue;
    Kernel& k = kernels_[c.kernel];
    if (c.level == run::CandidateLevel::original) {
      if (!k.original) k.original = taken_;
      continue;
    }
    if (c.level == run::CandidateLevel::rebuilt && !k.rebuilt) k.rebuilt = taken_;
    // A key's fastest sample, the first of equally fast ones.
    const std::pair<double, std::size_t> entry{c.seconds, taken_};
    auto [it, fresh] = k.fastest.try_emplace(Key{c.source, c.configuration}, entry);
    if (!fresh) {
      if (entry >= it->second) continue;
      k.ranked.erase(it->second);
      it->second = entry;
    }
    k.ranked.insert(entry);
  }
}

std::vector<std::size_t> ConfirmationSets::set(const run::RunRecord& record,
                                               std::size_t kernel) const {
  const Kernel& k = kernels_.at(kernel);
  if (!k.original || k.ranked.empty() || top_ == 0) return {};
  auto key_of = [&](std::size_t i) {
    const run::CandidateRecord& c = record.candidates[i];
    return Key{c.source, c.configuration};
  };
  std::vector<std::size_t> out{*k.original};
  std::set<Key> seen{key_of(*k.original)};
  if (k.rebuilt && seen.insert(key_of(*k.rebuilt)).second) out.push_back(*k.rebuilt);
  std::size_t picked = 0;
  for (auto it = k.ranked.begin(); it != k.ranked.end() && picked < top_; ++it) {
    if (seen.contains(key_of(it->second))) continue;  // the original's or the rebuilt's code
    out.push_back(it->second);
    ++picked;
  }
  return out;
}

// Wall time the confirmation will take, from the measurements so far (each evaluator runs every
// re-measurement).
double confirmation_estimate(const Master& m, const ConfirmationSets& sets) {
  const config::TimingConfig& t = m.config.timing;
  double total = 0;
  for (std::size_t k = 0; k < m.search->kernels().size(); ++k) {
    for (std::size_t i : sets.set(m.record, k)) {
      const run::CandidateRecord* c = &m.record.candidates[i];
      // What one run cost as a whole (restore, run, verify; on the host backend a process of
      // its own), from the evaluation: its verified run, warm-ups and timed runs.
      const double runs = 1.0 + t.warmup + t.repeats;
      const double per_run = std::max(c->seconds > 0 ? c->seconds : 0.0,
                                      (c->evaluation_seconds - c->compile_seconds) / runs);
      total += t.confirm_rounds *
               (c->compile_seconds + (1.0 + t.warmup + t.confirm_repeats) * per_run);
    }
  }
  return total;
}

// Re-measures the best candidates of each kernel and its original, interleaved, with more
// repetitions, on every evaluator, and commits the measurements to the run database.
bool confirm_winners(Master& m, Dispatcher& dispatcher) {
  const config::TimingConfig& t = m.config.timing;
  for (const auto& c : m.record.confirmations) {
    if (c.after_generation == m.record.generations) {
      log::info("the run was confirmed after generation ", c.after_generation,
                " already (a resumed run with nothing left to do)");
      return true;
    }
  }
  struct Slot {
    std::uint64_t candidate;
    std::uint32_t kernel;
    std::uint32_t round;
  };
  std::vector<protocol::WorkItem> items;
  std::vector<Slot> slots;
  std::size_t kernels = 0, measured = 0;
  ConfirmationSets sets(m.search->kernels().size(), t.confirm_top);
  sets.take(m.record);
  for (std::size_t k = 0; k < m.search->kernels().size(); ++k) {
    const std::vector<std::size_t> set = sets.set(m.record, k);
    if (set.empty()) {
      if (t.confirm_top > 0)
        log::warning("kernel ", m.search->kernels()[k].name,
                     ": nothing to confirm (the original or every other candidate failed)");
      continue;
    }
    ++kernels;
    measured += set.size();
    for (std::uint32_t round = 0; round < t.confirm_rounds; ++round) {
      for (std::size_t j = 0; j < set.size(); ++j) {
        // Rotated each round, so that no candidate always follows the same one.
        const run::CandidateRecord& c = m.record.candidates[set[(j + round) % set.size()]];
        protocol::WorkItem item;
        item.id = items.size();
        item.source = c.source;
        item.request.kernel = c.kernel;
        item.request.variant = replay::wire::decode_variant(c.configuration);
        item.request.options = m.search->run_options(c.kernel);
        item.request.options.repeats = t.confirm_repeats;
        // The code that is confirmed is what `r3 apply` will load: it comes back once.
        item.request.options.return_code = round == 0 && c.level != run::CandidateLevel::original;
        items.push_back(std::move(item));
        slots.push_back({c.id, c.kernel, round});
      }
    }
  }
  if (items.empty()) return true;
  const int evaluators = dispatcher.evaluators();
  log::info("confirming: ", measured, " candidates of ", kernels,
            " kernel(s) including the originals, ", t.confirm_rounds, " interleaved round(s) of ",
            t.confirm_repeats, " timed runs on each of ", evaluators, " evaluator(s)");
  auto start = Clock::now();
  dispatcher.add_to_every_evaluator(items);
  std::vector<Dispatcher::Finished> results;
  const std::size_t expected = items.size() * static_cast<std::size_t>(evaluators);
  while (results.size() < expected) {
    if (stop_requested() != StopRequest::none) return false;
    if (auto r = dispatcher.next(0.5); r && !r->abandoned) results.push_back(std::move(*r));
  }
  for (const Dispatcher::Finished& r : results) {
    if (r.id >= slots.size()) continue;
    const Slot& slot = slots[r.id];
    run::ConfirmationRecord c;
    c.candidate = slot.candidate;
    c.kernel = slot.kernel;
    c.after_generation = m.record.generations;
    c.round = slot.round;
    c.evaluator = r.evaluator;
    c.repeats = t.confirm_repeats;
    c.outcome = r.evaluation.outcome;
    c.message = with_source_names(m.parameter_names.at(slot.kernel),
                                  stored_message(r.evaluation.message));
    if (r.evaluation.outcome == replay::Outcome::ok) {
      c.seconds = r.evaluation.run.seconds;
      std::tie(c.min_seconds, c.max_seconds) = summed_min_max(r.evaluation);
    }
    m.record.confirmations.push_back(std::move(c));
    keep_code(m.record, slot.candidate, slot.kernel, r.evaluation);
  }
  log::info("confirmation took ", seconds_since(start), " s");
  return true;
}

}  // namespace r3::tune
