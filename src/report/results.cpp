#include "r3/report/results.hpp"

#include "r3/report/unit_patch.hpp"

#include <nlohmann/json.hpp>
#include <sstream>

#include "html.hpp"
#include "r3/config/tune_config.hpp"
#include "r3/error.hpp"
#include "r3/files.hpp"
#include "r3/report/diff.hpp"
#include "r3/result_notes.hpp"
#include "r3/winner_code_file.hpp"
#include "svg.hpp"

namespace r3::report {
namespace {

namespace fs = std::filesystem;

using nlohmann::json;

// A kernel's directory name: its tune.yaml name with anything unsafe in a path replaced.
std::string directory_name(const std::string& kernel) {
  std::string out;
  for (char c : kernel)
    out +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ? c : '_';
  if (out.empty() || out == "." || out == "..") out = "kernel";
  return out;
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string yaml_string(std::string_view text) { return json(std::string(text)).dump(); }

bool is_identifier(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::string candidates_csv(const run::RunRecord& record, const std::vector<KernelResult>& results) {
  std::ostringstream out;
  out.precision(9);
  out << "id,generation,kernel,level,parent,source,outcome,seconds,min_seconds,max_seconds,"
         "speedup,compile_seconds,evaluation_seconds,registers,spilled_bytes,shared_bytes,"
         "code_bytes,evaluator,run_seconds,description,message\n";
  for (const auto& c : record.candidates) {
    double original = c.kernel < results.size() && results[c.kernel].original
                          ? results[c.kernel].original->seconds
                          : 0;
    std::string name =
        c.kernel < results.size() ? results[c.kernel].name : std::to_string(c.kernel);
    std::string message = c.message.substr(0, c.message.find('\n'));
    out << c.id << ',' << c.generation << ',' << csv_field(name) << ',' << to_string(c.level) << ','
        << c.parent << ',' << c.source.hex() << ',' << csv_field(std::string(to_string(c.outcome)))
        << ',';
    if (c.outcome == Outcome::ok) {
      out << c.seconds << ',' << c.min_seconds << ',' << c.max_seconds << ',';
      if (original > 0 && c.seconds > 0) out << original / c.seconds;
    } else {
      out << ",,,";
    }
    out << ',' << c.compile_seconds << ',' << c.evaluation_seconds << ',' << c.registers << ','
        << c.spilled_bytes << ',' << c.shared_bytes << ',' << c.code_bytes << ',' << c.evaluator
        << ',' << c.run_seconds << ',' << csv_field(c.description) << ',' << csv_field(message)
        << '\n';
  }
  return out.str();
}

std::string confirmations_csv(const run::RunRecord& record,
                              const std::vector<KernelResult>& results) {
  std::ostringstream out;
  out.precision(9);
  out << "kernel,candidate,after_generation,round,evaluator,repeats,outcome,seconds,min_seconds,"
         "max_seconds,message\n";
  for (const auto& c : record.confirmations) {
    std::string name =
        c.kernel < results.size() ? results[c.kernel].name : std::to_string(c.kernel);
    out << csv_field(name) << ',' << c.candidate << ',' << c.after_generation << ',' << c.round
        << ',' << c.evaluator << ',' << c.repeats << ','
        << csv_field(std::string(to_string(c.outcome))) << ',' << c.seconds << ',' << c.min_seconds
        << ',' << c.max_seconds << ',' << csv_field(c.message.substr(0, c.message.find('\n')))
        << '\n';
  }
  return out.str();
}

// The winner's configuration as a tune.yaml that replays it (and can start a new search there).
std::string fragment(const config::TuneConfig& config, const config::KernelSelection& selection,
                     const KernelResult& k, const fs::path& source_file) {
  const run::CandidateRecord& w = *k.winner;
  json c =
      json::parse(w.configuration.empty() ? std::string("{}") : w.configuration, nullptr, false);
  if (c.is_discarded()) c = json::object();
  std::ostringstream out;
  out << "# r3 result for kernel '" << k.name << "': candidate " << w.id << " ("
      << to_string(w.level) << ": " << w.description << ")\n";
  if (k.keep_original)
    out << kKeepOriginalNote << ": no candidate was faster than it, run for run\n";
  if (k.rebuilt_ratio > 0)
    out << "# the rebuilt original (" << k.rebuilt->description << ") ran at "
        << svg::number(k.rebuilt_ratio) << "x the speed of the recorded code\n";
  if (k.confirmed) {
    out << kConfirmedSpeedupNote << svg::number(k.speedup) << "x (" << svg::number(k.speedup_low)
        << "-" << svg::number(k.speedup_high) << " over " << k.pairs << " neighbouring pairs), "
        << format_seconds(k.original_seconds) << " -> " << format_seconds(k.winner_seconds) << "\n";
  } else {
    out << "# not confirmed: a single sample of " << format_seconds(k.winner_seconds) << "\n";
  }
  out << "# replay it: r3 replay --config "
      << "best.yaml\n";
  out << "# from run database of " << config.file.string() << "\n";
  out << "capture: " << yaml_string(config.capture.string()) << "\n";
  out << "backend: " << config::to_string(config.backend) << "\n";
  out << "kernels:\n  - name: " << yaml_string(selection.name) << "\n";
  if (!source_file.empty()) out << "    source: " << yaml_string(source_file.string()) << "\n";
  if (c.contains("entry") && !c["entry"].get<std::string>().empty())
    out << "    entry: " << yaml_string(c["entry"].get<std::string>()) << "\n";
  if (!selection.launches.empty()) {
    out << "    launches: [";
    for (std::size_t i = 0; i < selection.launches.size(); ++i)
      out << (i ? ", " : "") << selection.launches[i];
    out << "]\n";
  }
  if (c.contains("defines")) {
    std::string defines;
    for (const auto& [name, value] : c["defines"].items()) {
      // The search defines R3_TUNABLE(...) away; the sources guard it themselves.
      if (!is_identifier(name)) continue;
      defines += (defines.empty() ? "" : ", ") + yaml_string(name) + ": " +
                 yaml_string(value.get<std::string>());
    }
    if (!defines.empty()) out << "    defines: {" << defines << "}\n";
  }
  for (const char* key : {"include_dirs", "flags"}) {
    if (!c.contains(key) || c[key].empty()) continue;
    out << "    " << key << ": [";
    bool first = true;
    for (const auto& item : c[key]) {
      out << (first ? "" : ", ") << yaml_string(item.get<std::string>());
      first = false;
    }
    out << "]\n";
  }
  if (c.contains("passes") && !c["passes"].get<std::string>().empty())
    out << "    passes: " << yaml_string(c["passes"].get<std::string>()) << "\n";
  if (c.contains("block")) {
    out << "    block: [" << c["block"][0] << ", " << c["block"][1] << ", " << c["block"][2]
        << "]\n";
    if (c.value("keep_grid", false)) out << "    grid: recorded\n";
  }
  out << "timing:\n  warmup: " << config.timing.warmup << "\n  repeats: " << config.timing.repeats
      << "\n";
  return out.str();
}

config::TuneConfig stored_config(const run::RunRecord& record) {
  return config::parse_tune_config(record.tune_yaml, record.tune_file);
}

}  // namespace

std::vector<std::string> kernel_names(const config::TuneConfig& config) {
  std::vector<std::string> names;
  for (const auto& k : config.kernels) names.push_back(k.name);
  return names;
}

std::vector<std::string> kernel_names(const run::RunRecord& record) {
  return kernel_names(stored_config(record));
}

std::vector<std::string> summary_lines(const std::vector<KernelResult>& results) {
  std::vector<std::string> lines;
  for (const KernelResult& k : results) {
    std::ostringstream line;
    line << k.name << ": ";
    if (!k.winner) {
      line << "no candidate passed verification";
    } else if (k.keep_original) {
      line << "keep the application's code: no candidate was faster ("
           << format_seconds(k.original_seconds)
           << (k.confirmed ? ", confirmed" : ", single sample") << ")";
    } else if (k.confirmed) {
      line << svg::number(k.speedup) << "x confirmed (" << svg::number(k.speedup_low) << "-"
           << svg::number(k.speedup_high) << " over " << k.pairs << " neighbouring pairs on "
           << k.evaluators.size() << " evaluator(s)), " << format_seconds(k.original_seconds)
           << " -> " << format_seconds(k.winner_seconds);
    } else if (k.original) {
      line << svg::number(k.speedup) << "x in a single sample (not confirmed), "
           << format_seconds(k.original_seconds) << " -> " << format_seconds(k.winner_seconds);
    } else {
      line << "best " << format_seconds(k.winner_seconds) << " (the original did not verify)";
    }
    if (k.winner && !k.keep_original)
      line << ", candidate " << k.winner->id << " (" << to_string(k.winner->level) << ": "
           << k.winner->description << ")";
    if (k.rebuilt_ratio > 0)
      line << "; rebuilt original at " << svg::number(k.rebuilt_ratio)
           << "x the recorded code's speed";
    lines.push_back(line.str());
  }
  return lines;
}

ResultsFiles write_results(const run::RunRecord& record, const fs::path& directory) {
  config::TuneConfig config = stored_config(record);
  std::vector<KernelResult> results = analyse(record, kernel_names(config));
  ResultsFiles files;
  files.directory = directory;
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec) throw IoError("mkdir", "cannot create " + directory.string() + ": " + ec.message());
  for (std::size_t i = 0; i < results.size(); ++i) {
    const KernelResult& k = results[i];
    const config::KernelSelection& selection = config.kernels[i];
    KernelFiles kf;
    kf.name = k.name;
    files.kernels.push_back(kf);
    if (!k.winner) continue;
    fs::path dir = directory / directory_name(k.name);
    fs::create_directories(dir, ec);
    if (ec) throw IoError("mkdir", "cannot create " + dir.string() + ": " + ec.message());
    fs::path source_name;
    // The kernel's source as tune.yaml gave it: the original's, or the rebuilt original's when
    // the original is the recorded code (whatever their outcome).
    const run::CandidateRecord* first = nullptr;
    for (const auto& c : record.candidates) {
      if (c.kernel == i && run::is_original(c.level) && !record.sources.at(c.source).empty()) {
        first = &c;
        break;
      }
    }
    const bool winner_is_recorded = record.sources.at(k.winner->source).empty();
    if (!selection.source.empty() && first && !winner_is_recorded) {
      source_name = selection.source.filename();
      const std::string& best = record.sources.at(k.winner->source);
      const std::string& original = record.sources.at(first->source);
      kf.source = dir / source_name;
      write_file(kf.source, best);
      // A unit cut from the application's file: the patch is against that file (and its
      // headers), to apply in the source's directory; else against the source tune.yaml named.
      std::string patch;
      // The application builds the winner as it is: the tunables at the winner's values.
      std::map<std::string, std::string> values;
      const json configuration = json::parse(k.winner->configuration, nullptr, false);
      if (configuration.is_object() && configuration.contains("defines"))
        for (const auto& [name, value] : configuration["defines"].items())
          if (value.is_string() && best.find("R3_TUNABLE(" + name + ",") != std::string::npos)
            values[name] = value.get<std::string>();
      patch = application_patch(patch_files_from_unit(original, with_tunable_values(best, values)),
                                selection.source.parent_path());
      if (patch.empty()) patch = unified_diff(original, best, source_name.string());
      fs::path diff = dir / "best.diff";
      if (!patch.empty()) {
        write_file(diff, patch);
        kf.diff = diff;
      } else {
        fs::remove(diff, ec);
      }
    }
    kf.fragment = dir / "best.yaml";
    write_file(kf.fragment, fragment(config, selection, k, source_name));
    // The winner's code as its confirmation ran it; none for the application's own code.
    const run::CodeRecord* code = nullptr;
    for (const run::CodeRecord& c : record.codes)
      if (c.candidate == k.winner->id && !k.keep_original) code = &c;
    if (code) {
      write_winner_code(dir, *code);
      kf.code = dir / kWinnerCodeFile;
    } else {
      remove_winner_code(dir);
    }
    files.kernels.back() = kf;
  }
  files.candidates_csv = directory / "candidates.csv";
  write_file(files.candidates_csv, candidates_csv(record, results));
  files.confirmations_csv = directory / "confirmations.csv";
  write_file(files.confirmations_csv, confirmations_csv(record, results));
  files.report = directory / "report.html";
  write_file(files.report, render_html(record, results, files));
  files.results = std::move(results);
  return files;
}

}  // namespace r3::report
