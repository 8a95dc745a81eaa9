#include "r3/report/analysis.hpp"

#include <algorithm>

namespace r3::report {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

namespace {

void confirm(const run::RunRecord& record, KernelResult& k,
             const std::map<std::uint64_t, const run::CandidateRecord*>& by_id) {
  // Only the latest confirmation counts: an earlier one measured an earlier state of the run.
  std::uint32_t latest = 0;
  bool any = false;
  for (const auto& c : record.confirmations) {
    if (c.kernel != k.kernel) continue;
    latest = any ? std::max(latest, c.after_generation) : c.after_generation;
    any = true;
  }
  if (!any) return;
  std::map<std::uint64_t, ConfirmedCandidate> measured;
  // (evaluator, round) -> candidate -> median seconds, to pair neighbours.
  std::map<std::pair<int, std::uint32_t>, std::map<std::uint64_t, double>> runs;
  for (const auto& c : record.confirmations) {
    if (c.kernel != k.kernel || c.after_generation != latest) continue;
    ConfirmedCandidate& m = measured[c.candidate];
    m.candidate = c.candidate;
    k.evaluators.insert(c.evaluator);
    if (c.outcome == Outcome::ok) {
      m.seconds.push_back(c.seconds);
      runs[{c.evaluator, c.round}][c.candidate] = c.seconds;
    } else {
      ++m.failed;
    }
  }
  const run::CandidateRecord* winner = nullptr;
  double winner_median = 0;
  for (auto& [id, m] : measured) {
    if (!m.seconds.empty()) {
      m.median = median(m.seconds);
      m.low = *std::min_element(m.seconds.begin(), m.seconds.end());
      m.high = *std::max_element(m.seconds.begin(), m.seconds.end());
    }
    k.confirmations.push_back(m);
    auto it = by_id.find(id);
    // A candidate that failed any re-measurement is not trusted to win.
    if (it == by_id.end() || m.seconds.empty() || m.failed > 0) continue;
    if (k.original && id == k.original->id) continue;
    if (!winner || m.median < winner_median) {
      winner = it->second;
      winner_median = m.median;
    }
  }
  std::sort(k.confirmations.begin(), k.confirmations.end(),
            [](const ConfirmedCandidate& a, const ConfirmedCandidate& b) {
              bool a_ok = !a.seconds.empty(), b_ok = !b.seconds.empty();
              if (a_ok != b_ok) return a_ok;
              return a.median < b.median;
            });
  if (!k.original || !measured.contains(k.original->id)) return;
  const ConfirmedCandidate& original = measured.at(k.original->id);
  if (original.seconds.empty()) return;
  // The original's time over another candidate's, run for run on the same evaluator.
  auto paired_ratios = [&](std::uint64_t other) {
    std::vector<double> ratios;
    for (const auto& [slot, times] : runs) {
      auto o = times.find(k.original->id), w = times.find(other);
      if (o != times.end() && w != times.end() && w->second > 0)
        ratios.push_back(o->second / w->second);
    }
    return ratios;
  };
  if (k.rebuilt && measured.contains(k.rebuilt->id)) {
    std::vector<double> ratios = paired_ratios(k.rebuilt->id);
    if (!ratios.empty()) k.rebuilt_ratio = median(ratios);
  }
  if (!winner) return;
  // The original may still be the fastest, or no faster than the winner run for run: then the
  // application's code is kept, at 1x.
  std::vector<double> ratios = paired_ratios(winner->id);
  if (ratios.empty()) return;
  // Confirmed means faster in every neighbouring pair, not only in the median of them.
  if (original.median <= winner_median || median(ratios) <= 1.0 ||
      *std::min_element(ratios.begin(), ratios.end()) <= 1.0) {
    winner = k.original;
    winner_median = original.median;
    ratios = paired_ratios(winner->id);
  }
  k.confirmed = true;
  k.winner = winner;
  k.original_seconds = original.median;
  k.winner_seconds = winner_median;
  k.speedup = median(ratios);
  k.speedup_low = *std::min_element(ratios.begin(), ratios.end());
  k.speedup_high = *std::max_element(ratios.begin(), ratios.end());
  k.pairs = ratios.size();
  k.keep_original = winner == k.original;
}

}  // namespace

std::vector<KernelResult> analyse(const run::RunRecord& record,
                                  const std::vector<std::string>& kernel_names) {
  std::vector<KernelResult> out(kernel_names.size());
  std::map<std::uint64_t, const run::CandidateRecord*> by_id;
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].kernel = i;
    out[i].name = kernel_names[i];
  }
  for (const auto& c : record.candidates) {
    by_id[c.id] = &c;
    if (c.kernel >= out.size()) continue;
    KernelResult& k = out[c.kernel];
    LevelFinding& level = k.levels[std::string(to_string(c.level))];
    ++level.evaluated;
    if (c.outcome != Outcome::ok) continue;
    ++level.ok;
    if (level.best_seconds == 0 || c.seconds < level.best_seconds) level.best_seconds = c.seconds;
    if (c.level == run::CandidateLevel::original && !k.original) k.original = &c;
    if (c.level == run::CandidateLevel::rebuilt && !k.rebuilt) k.rebuilt = &c;
    if (!k.best_sample || c.seconds < k.best_sample->seconds) k.best_sample = &c;
  }
  for (KernelResult& k : out) {
    confirm(record, k, by_id);
    if (!k.confirmed) {
      k.winner = k.best_sample;
      if (k.winner) k.winner_seconds = k.winner->seconds;
      if (k.original) k.original_seconds = k.original->seconds;
      if (k.winner && k.original && k.winner->seconds > 0) {
        k.speedup = k.speedup_low = k.speedup_high = k.original->seconds / k.winner->seconds;
      }
      if (k.rebuilt && k.original && k.rebuilt->seconds > 0)
        k.rebuilt_ratio = k.original->seconds / k.rebuilt->seconds;
      k.keep_original = k.winner && k.winner == k.original;
    }
    // Lineage: follow the parents of the winner's source back to the original.
    std::set<std::uint64_t> seen;
    for (const run::CandidateRecord* c = k.winner; c && seen.insert(c->id).second;) {
      k.lineage.push_back(c);
      auto it = c->parent >= 0 ? by_id.find(static_cast<std::uint64_t>(c->parent)) : by_id.end();
      c = it == by_id.end() ? nullptr : it->second;
    }
    if (k.original && (k.lineage.empty() || k.lineage.back()->id != k.original->id) &&
        k.winner != k.original)
      k.lineage.push_back(k.original);
    std::reverse(k.lineage.begin(), k.lineage.end());
  }
  return out;
}

}  // namespace r3::report
