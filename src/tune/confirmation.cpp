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

// What the winner confirmation of a kernel re-measures: its original (first) and its best
// distinct verified candidates (at most timing.confirm_top); empty when the original did not
// verify or nothing else did.
std::vector<const run::CandidateRecord*> confirmation_set(const Master& m, std::size_t kernel) {
  const run::CandidateRecord* original = nullptr;
  const run::CandidateRecord* rebuilt = nullptr;
  std::vector<const run::CandidateRecord*> ranked;
  for (const auto& c : m.record.candidates) {
    if (c.kernel != kernel || c.outcome != Outcome::ok || c.configuration.empty()) continue;
    if (c.level == run::CandidateLevel::original) {
      if (!original) original = &c;
    } else {
      if (c.level == run::CandidateLevel::rebuilt && !rebuilt) rebuilt = &c;
      ranked.push_back(&c);
    }
  }
  if (!original || ranked.empty() || m.config.timing.confirm_top == 0) return {};
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto* a, const auto* b) { return a->seconds < b->seconds; });
  // The original, the rebuilt original (its ratio to the recorded code is reported), then the
  // best distinct candidates.
  std::vector<const run::CandidateRecord*> out{original};
  std::set<std::pair<Hash128, std::string>> seen{{original->source, original->configuration}};
  if (rebuilt && seen.insert({rebuilt->source, rebuilt->configuration}).second) {
    out.push_back(rebuilt);
    ranked.erase(std::find(ranked.begin(), ranked.end(), rebuilt));
  }
  const std::size_t limit = m.config.timing.confirm_top + (out.size() - 1);
  for (const auto* c : ranked) {
    if (out.size() > limit) break;
    if (seen.insert({c->source, c->configuration}).second) out.push_back(c);
  }
  return out;
}

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

// Wall time the confirmation will take, from the measurements so far (each evaluator runs every
// re-measurement).
double confirmation_estimate(const Master& m) {
  const config::TimingConfig& t = m.config.timing;
  double total = 0;
  for (std::size_t k = 0; k < m.search->kernels().size(); ++k) {
    for (const auto* c : confirmation_set(m, k)) {
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
  for (std::size_t k = 0; k < m.search->kernels().size(); ++k) {
    std::vector<const run::CandidateRecord*> set = confirmation_set(m, k);
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
        const run::CandidateRecord& c = *set[(j + round) % set.size()];
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
