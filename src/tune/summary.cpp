#include "summary.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "clock.hpp"
#include "r3/hash.hpp"
#include "r3/report/analysis.hpp"

namespace r3::tune {

std::string batch_digest(const std::vector<Planned>& batch) {
  Hasher hasher;
  for (const Planned& p : batch) {
    hasher.update_field(std::to_string(p.record.id)).update_field(p.record.source.hex());
    hasher.update_field(p.record.plan);
  }
  return hasher.digest().hex().substr(0, 12);
}

void KernelBests::take(const run::RunRecord& record) {
  for (; taken_ < record.candidates.size(); ++taken_) {
    const run::CandidateRecord& c = record.candidates[taken_];
    if (c.kernel >= kernels_.size() || c.outcome != Outcome::ok) continue;
    Kernel& k = kernels_[c.kernel];
    if (c.level == run::CandidateLevel::original && !k.original) k.original = taken_;
    if (!k.best || c.seconds < record.candidates[*k.best].seconds) k.best = taken_;
  }
}

std::string progress_line(const Master& m, const GenerationFigures& f, const KernelBests& bests,
                          const std::vector<double>& latencies) {
  const std::uint32_t generation = f.generation;
  const std::size_t first = f.first;
  std::map<std::string, int> failed;
  int ok = 0;
  for (std::size_t i = first; i < m.record.candidates.size(); ++i) {
    const auto& c = m.record.candidates[i];
    if (c.outcome == Outcome::ok)
      ++ok;
    else
      ++failed[std::string(to_string(c.outcome))];
  }
  std::ostringstream line;
  line << "generation " << generation << ": " << (m.record.candidates.size() - first)
       << " candidates, " << ok << " ok";
  if (!failed.empty()) {
    int n = 0;
    std::string classes;
    for (const auto& [why, count] : failed) {
      n += count;
      classes += (classes.empty() ? "" : ", ") + std::to_string(count) + " " + why;
    }
    line << ", " << n << " failed (" << classes << ")";
  }
  for (const KernelBests::Kernel& k : bests.kernels()) {
    if (!k.best) continue;
    const double best = m.record.candidates[*k.best].seconds;
    line << "; best " << format_ms(best);
    if (k.original) {
      const double original = m.record.candidates[*k.original].seconds;
      line.precision(3);
      line << " (" << original / best << "x over " << format_ms(original) << ")";
    }
  }
  if (m.llm) {
    if (latencies.empty()) {
      line << "; LLM: no answers yet";
    } else {
      std::vector<double> sorted = latencies;
      std::sort(sorted.begin(), sorted.end());
      line.precision(3);
      line << "; LLM: " << sorted.size() << " answers, median latency " << sorted[sorted.size() / 2]
           << " s";
    }
  }
  line << "; evaluators busy " << static_cast<int>(std::lround(100 * f.busy_fraction)) << "%; ";
  line.precision(3);
  line << f.seconds << " s; search " << format_ms(f.search_seconds) << " (CPU "
       << format_ms(f.search_cpu_seconds) << ": proposals " << in_ms(f.proposals_cpu_seconds)
       << ", results " << in_ms(f.results_cpu_seconds) << ", run.h5 " << in_ms(f.write_cpu_seconds)
       << "), " << f.in_flight << " generation(s) in flight";
  return line.str();
}

std::string final_summary(const Master& m, const std::string& stop_reason,
                          const report::ResultsFiles& files, bool stopped) {
  std::ostringstream summary;
  summary << "finished after " << m.record.generations << " generation(s): " << stop_reason << "\n";
  std::map<std::string, int> outcomes;
  for (const auto& cand : m.record.candidates) ++outcomes[std::string(to_string(cand.outcome))];
  summary << "  " << m.record.candidates.size() << " candidates:";
  for (const auto& [why, n] : outcomes) summary << " " << n << " " << why << ";";
  summary << "\n";
  for (const std::string& line : report::summary_lines(files.results))
    summary << "  kernel " << line << "\n";
  if (m.llm) {
    evolve::Usage u = m.llm->usage();
    summary << "  LLM: " << u.prompt_tokens << " prompt + " << u.completion_tokens
            << " completion tokens, cost " << u.cost << ", " << m.search->llm_answers_rejected()
            << " answer(s) rejected\n";
  }
  summary << "  run database: " << m.database.string() << "\n";
  summary << "  results: " << files.directory.string() << "\n";
  summary << "  report: " << files.report.string();
  if (stopped) summary << "\n  to go on: r3-mpi " << m.config.file.string() << " --resume";
  return summary.str();
}

}  // namespace r3::tune
