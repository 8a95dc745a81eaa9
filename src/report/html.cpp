#include "html.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <sstream>
#include <utility>

#include "r3/version.hpp"
#include "svg.hpp"

namespace r3::report {

using svg::escape;
using svg::number;

std::string format_seconds(double seconds) {
  if (seconds <= 0) return "-";
  if (seconds < 1e-3) return number(seconds * 1e6, 4) + " us";
  if (seconds < 1) return number(seconds * 1e3, 4) + " ms";
  return number(seconds, 4) + " s";
}

namespace {

const std::vector<std::string> kColours = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                           "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};

// Each outcome's colour in the charts, which list the outcomes in this order (names from
// r3/outcome.hpp's one table).
constexpr std::pair<Outcome, const char*> kOutcomeColours[] = {
    {Outcome::ok, "#59a14f"},           {Outcome::compile_error, "#edc948"},
    {Outcome::launch_error, "#f28e2b"}, {Outcome::wrong_result, "#e15759"},
    {Outcome::timeout, "#b07aa1"},      {Outcome::crash, "#7f0000"}};
// The levels' rows, in this order.
constexpr run::CandidateLevel kLevelRows[] = {
    run::CandidateLevel::original, run::CandidateLevel::rebuilt, run::CandidateLevel::source,
    run::CandidateLevel::compiler, run::CandidateLevel::launch,  run::CandidateLevel::parameters};

// The best speedup over the original found so far, after each candidate of a kernel, against
// its index among the kernel's candidates (by_wall false) or the run's wall time (by_wall true).
std::vector<svg::Series> progress(const run::RunRecord& record,
                                  const std::vector<KernelResult>& results, bool by_wall) {
  std::vector<svg::Series> out;
  for (const KernelResult& k : results) {
    svg::Series s;
    s.label = k.name;
    s.colour = kColours[k.kernel % kColours.size()];
    double best = 0;
    std::size_t index = 0;
    for (const auto& c : record.candidates) {
      if (c.kernel != k.kernel) continue;
      ++index;
      if (c.outcome == Outcome::ok && (best == 0 || c.seconds < best)) best = c.seconds;
      if (best == 0) continue;
      double y = k.original && k.original->seconds > 0 ? k.original->seconds / best : best * 1e3;
      s.points.push_back({by_wall ? c.run_seconds : static_cast<double>(index), y});
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string speedup_table(const std::vector<KernelResult>& results, const ResultsFiles& files,
                          const std::filesystem::path& base) {
  std::ostringstream out;
  out << "<table><tr><th>kernel</th><th>original</th><th>winner</th><th>speedup</th>"
         "<th>spread</th><th>confirmed by</th><th>winner</th><th>rebuilt original</th>"
         "<th>files</th></tr>";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const KernelResult& k = results[i];
    out << "<tr><td>" << escape(k.name) << "</td>";
    if (!k.winner) {
      out << "<td colspan=\"8\">no candidate passed verification</td></tr>";
      continue;
    }
    out << "<td>" << format_seconds(k.original_seconds) << "</td><td>"
        << format_seconds(k.winner_seconds) << "</td><td class=\"big\">"
        << (k.speedup > 0 ? number(k.speedup) + "x" : "-") << "</td><td>";
    if (k.confirmed)
      out << number(k.speedup_low) << "x - " << number(k.speedup_high) << "x</td><td>" << k.pairs
          << " interleaved pairs on " << k.evaluators.size() << " evaluator(s)";
    else
      out << "-</td><td><b>not confirmed</b> (single sample)";
    if (k.keep_original)
      out << "</td><td><b>keep the application's code</b>: no candidate was faster";
    else
      out << "</td><td>#" << k.winner->id << " " << escape(std::string(to_string(k.winner->level)))
          << ": " << escape(k.winner->description);
    // The rebuilt original's speed relative to the recorded code: below 1x the rebuild (another
    // compiler, the JIT) is slower than what the application runs.
    out << "</td><td>" << (k.rebuilt_ratio > 0 ? number(k.rebuilt_ratio) + "x" : "-")
        << "</td><td>";
    if (i < files.kernels.size()) {
      const KernelFiles& f = files.kernels[i];
      for (const auto& path : {f.source, f.diff, f.fragment}) {
        if (path.empty()) continue;
        std::string rel = std::filesystem::relative(path, base).generic_string();
        out << "<a href=\"" << escape(rel) << "\">" << escape(rel) << "</a> ";
      }
    }
    out << "</td></tr>";
  }
  out << "</table>";
  return out.str();
}

std::string levels_section(const std::vector<KernelResult>& results) {
  std::ostringstream out;
  for (const KernelResult& k : results) {
    std::vector<svg::Bar> bars;
    out << "<table><tr><th>" << escape(k.name)
        << " level</th><th>evaluated</th><th>verified</th><th>best</th><th>over the "
           "original</th></tr>";
    for (run::CandidateLevel level : kLevelRows) {
      const std::string name(to_string(level));
      auto it = k.levels.find(name);
      if (it == k.levels.end()) continue;
      const LevelFinding& f = it->second;
      double speedup = k.original && f.best_seconds > 0 ? k.original->seconds / f.best_seconds : 0;
      out << "<tr><td>" << name << "</td><td>" << f.evaluated << "</td><td>" << f.ok << "</td><td>"
          << format_seconds(f.best_seconds) << "</td><td>"
          << (speedup > 0 ? number(speedup) + "x" : "-") << "</td></tr>";
      if (level != run::CandidateLevel::original)
        bars.push_back({name, speedup, speedup, speedup,
                        speedup > 0 ? number(speedup) + "x" : "none verified"});
    }
    out << "</table>";
    out << svg::bar_chart({"Best speedup found by each level: " + k.name,
                           "speedup over the original (single samples)", "", false},
                          bars, 1.0);
  }
  return out.str();
}

std::string failures_section(const run::RunRecord& record) {
  std::map<std::uint32_t, std::vector<double>> per_generation;
  std::map<std::string, std::size_t> totals;
  for (const auto& c : record.candidates) {
    auto& counts = per_generation[c.generation];
    counts.resize(std::size(kOutcomeColours));
    for (std::size_t i = 0; i < std::size(kOutcomeColours); ++i)
      if (kOutcomeColours[i].first == c.outcome) counts[i] += 1;
    ++totals[std::string(to_string(c.outcome))];
  }
  std::vector<svg::Stack> stacks;
  for (const auto& [g, counts] : per_generation) stacks.push_back({std::to_string(g), counts});
  std::ostringstream out;
  out << "<p>";
  for (const auto& [outcome, n] : totals) out << escape(outcome) << ": " << n << ". ";
  out << "</p>";
  std::vector<std::string> names, colours;
  for (const auto& [outcome, colour] : kOutcomeColours) {
    names.emplace_back(to_string(outcome));
    colours.emplace_back(colour);
  }
  out << svg::stacked_columns({"Outcomes per generation", "generation", "candidates", false}, names,
                              colours, stacks);
  return out.str();
}

std::string lineage_section(const std::vector<KernelResult>& results) {
  std::ostringstream out;
  for (const KernelResult& k : results) {
    if (k.lineage.empty()) continue;
    out << "<h3>" << escape(k.name) << "</h3><ol class=\"lineage\">";
    for (const run::CandidateRecord* c : k.lineage) {
      out << "<li><b>#" << c->id << "</b> generation " << c->generation << ", "
          << escape(std::string(to_string(c->level))) << ": " << escape(c->description)
          << " &mdash; ";
      if (c->outcome == Outcome::ok) {
        out << format_seconds(c->seconds);
        if (k.original && c->seconds > 0)
          out << " (" << number(k.original->seconds / c->seconds) << "x)";
      } else {
        out << escape(std::string(to_string(c->outcome)));
      }
      out << "</li>";
    }
    out << "</ol>";
  }
  return out.str();
}

std::string confirmation_section(const std::vector<KernelResult>& results) {
  std::ostringstream out;
  for (const KernelResult& k : results) {
    if (k.confirmations.empty()) {
      out << "<p>" << escape(k.name) << ": no confirmation was run (timing.confirm_top: 0, or the "
          << "run ended before it).</p>";
      continue;
    }
    out << "<table><tr><th>" << escape(k.name)
        << " candidate</th><th>median</th><th>fastest</th><th>slowest</th><th>runs</th>"
           "<th>failed</th></tr>";
    for (const ConfirmedCandidate& c : k.confirmations) {
      bool original = k.original && c.candidate == k.original->id;
      bool winner = k.winner && c.candidate == k.winner->id;
      out << "<tr" << (winner ? " class=\"winner\"" : "") << "><td>#" << c.candidate
          << (original ? " (original)" : "") << (winner ? " (winner)" : "") << "</td><td>"
          << format_seconds(c.median) << "</td><td>" << format_seconds(c.low) << "</td><td>"
          << format_seconds(c.high) << "</td><td>" << c.seconds.size() << "</td><td>" << c.failed
          << "</td></tr>";
    }
    out << "</table>";
  }
  return out.str();
}

}  // namespace

std::string render_html(const run::RunRecord& record, const std::vector<KernelResult>& results,
                        const ResultsFiles& files) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      << "<title>r3 tuning report: " << escape(record.tune_file) << "</title><style>"
      << "body{font-family:sans-serif;max-width:1000px;margin:1em auto;color:#222}"
      << "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;"
      << "text-align:left;font-size:13px}th{background:#f3f3f3}.big{font-size:20px;font-weight:"
         "bold}"
      << "tr.winner{background:#eef7ee}h2{border-bottom:1px solid #ddd;margin-top:1.5em}"
      << "svg{display:block;margin:.5em 0}</style></head><body>\n";
  std::size_t ok = 0;
  for (const auto& c : record.candidates) ok += c.outcome == Outcome::ok;
  out << "<h1>r3 tuning report</h1><p>" << escape(record.tune_file) << " &mdash; "
      << record.generations << " generation(s), " << record.candidates.size() << " candidates ("
      << ok << " verified), " << record.sessions << " session(s), "
      << number(record.elapsed_seconds, 4) << " s of wall time; written by r3 "
      << escape(record.r3_version) << ", report by r3 " << escape(std::string(version_string()))
      << ".</p>\n";

  out << "<section id=\"speedup\"><h2>Speedup per kernel</h2>"
      << speedup_table(results, files, files.directory);
  std::vector<svg::Bar> bars;
  for (const KernelResult& k : results) {
    if (k.speedup > 0)
      bars.push_back({k.name, k.speedup, k.speedup_low, k.speedup_high,
                      number(k.speedup) + "x" + (k.confirmed ? "" : " (not confirmed)")});
  }
  out << svg::bar_chart({"Speedup of the winner over the original (median, range of pairs)",
                         "speedup", "", false},
                        bars, 1.0)
      << "<p>The confirmation re-measures the best candidates and the original with more "
         "repetitions, interleaved, on every evaluator; the speedup is the median ratio of "
         "neighbouring runs and the range is their fastest and slowest.</p></section>\n";

  out << "<section id=\"progress-evaluations\"><h2>Best so far against evaluations</h2>"
      << svg::line_chart({"Best speedup over the original so far", "candidates evaluated",
                          "speedup (single samples)", false},
                         progress(record, results, false))
      << "</section>\n";
  out << "<section id=\"progress-wall\"><h2>Best so far against wall time</h2>"
      << svg::line_chart({"Best speedup over the original so far", "wall time of the run (s)",
                          "speedup (single samples)", false},
                         progress(record, results, true))
      << "</section>\n";
  out << "<section id=\"levels\"><h2>Contribution of each level</h2>" << levels_section(results)
      << "</section>\n";
  out << "<section id=\"failures\"><h2>Failure classes over generations</h2>"
      << failures_section(record) << "</section>\n";
  out << "<section id=\"lineage\"><h2>Lineage of the winner</h2>" << lineage_section(results)
      << "</section>\n";
  out << "<section id=\"confirmation\"><h2>Winner confirmation</h2>"
      << confirmation_section(results) << "</section>\n";
  out << "<p>Every candidate: <a href=\"candidates.csv\">candidates.csv</a>; every "
         "re-measurement: <a href=\"confirmations.csv\">confirmations.csv</a>. Regenerate with "
         "<code>r3 report "
      << escape(record.tune_file.empty() ? std::string("run.h5") : std::string("RUN.h5"))
      << "</code>.</p></body></html>\n";
  return out.str();
}

}  // namespace r3::report
