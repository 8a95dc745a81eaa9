// bench/tune_scaling: how the tuning job's throughput grows with its evaluators (DESIGN.md §9),
// measured in one run. For each evaluator count k it runs `mpirun -n k+1 --bind-to none r3-mpi`
// on the same capture (one evaluator per GPU on a GPU node: an evaluator binds the GPU of its
// node-local rank)
// with batches of 4 candidates per evaluator and 48 evaluations per evaluator, no confirmation,
// and reads the job's progress lines: candidates per second over the generations' wall time,
// the evaluators' busy fraction, and the scaling efficiency (throughput at k over k times the
// throughput at 1). It does this with no LLM endpoint and with one on 127.0.0.1 that answers
// every chat request after --llm-delay seconds (a real HTTP server speaking the OpenAI protocol,
// whose answers are the source the prompt showed, with a table of their own, so that every
// answer is a new candidate: the search drops near-duplicates).
//
// With --simulate the job runs the simulate backend (docs/tune-yaml.md, simulate): candidates
// that take --compile-time and --run-time (+-30%) without running anything, so that 16 to 256
// evaluators fit on one small machine (oversubscribed, mostly sleeping) and what limits rank 0
// and the flow of work shows. Besides the whole run it prints the busy fraction while the search
// was still proposing ("steady": after the first commit, which includes the start, and before the
// last candidates drain and evaluators run out of work), how many LLM answers were evaluated,
// and rank 0's search: its share of the generations' wall time ("search": near 100%, rank 0
// sets the pace) and its searching thread's CPU per candidate ("ms/cand"), and the CUDA
// contexts candidates lost ("lost": each one costs its evaluator a new sandbox child).
//
// Several kernels of one capture (`--kernel A,B --source FILE` or `--source FA,FB`) are tuned
// together, as tune.yaml's kernels list: candidates of mixed costs, as a real program's.
//
// Usage: tune_scaling --capture FILE.h5 --kernel NAME[,NAME...] --source FILE[,FILE...]
//                     [--evaluators 1,2,4]
//                     [--per-evaluator 48] [--llm-delay 5] [--mpirun mpirun]
//                     [--simulate [--compile-time 1] [--run-time 2] [--lost-rate 0]
//                     [--lost-time 2.7] [--prepare-time 0]] [--no-llm | --llm-only]
//                     [--standby] [--keep DIR] [--append FILE] [--search-windows 10,50,...]
//        tune_scaling --search-windows G0,G1,... --search-log LOG [--search-log LOG ...]
//
// --search-windows: rank 0's search time per generation (its wall time and its searching
// thread's CPU time, as the progress lines give them), median and mean per window of
// generations, and the last window's medians over the first: whether rank 0's cost stays flat as
// the history grows (issue 24: "from generation 10 to 500" on the host backend), with the trend
// through every generation (a Theil-Sen line). --search-log LOG reads a kept job log instead of
// running one.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat_server.hpp"
#include "r3/report/analysis.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Options {
  fs::path capture;
  std::vector<std::string> kernels;  // tune.yaml's kernels, each with its source
  std::vector<fs::path> sources;
  std::vector<int> evaluators = {1, 2, 4};
  int per_evaluator = 48;
  double llm_delay = 5;
  std::string mpirun = "mpirun";
  bool simulate = false;
  fs::path keep;  // where the runs' tune files, logs and results stay; empty: a temporary folder
  double compile_time = 1, run_time = 2;
  double lost_rate = 0, lost_time = 2.7;  // simulated lost GPU contexts (--lost-rate)
  double prepare_time = 0;                // a simulated sandbox child's start
  bool standby = false;                   // timing.standby_sandbox
  std::vector<bool> llm = {false, true};
  // Further tune.yaml sections (e.g. search: bo: ...) appended to every run's tune file: the
  // same build measured with an option on and off.
  std::string append;
  std::vector<int> search_windows;  // window bounds in generations (--search-windows)
  std::vector<fs::path> search_logs;  // jobs' logs to read instead of running (--search-log)
};

struct Measured {
  int generations = 0;
  int candidates = 0;
  int ok = 0;
  double generation_seconds = 0;  // sum of the generations' wall times
  double busy_weighted = 0;       // sum of busy fraction x generation time
  double wall = 0;                // the whole mpirun, start-up included
  // Generations committed while the search still proposed (before the drain at the end).
  double steady_seconds = 0, steady_busy_weighted = 0;
  // Rank 0's search (proposals, observations, commits) per generation, from the progress
  // lines: its wall time and its searching thread's CPU time. Search wall near the
  // generations' time means rank 0, not the evaluators, sets the pace.
  double search_seconds = 0, search_cpu_seconds = 0;
  int llm_candidates = 0;  // LLM answers evaluated (the run's candidates.csv)
  // GPU contexts lost to candidates, on CUDA or simulated: each costs its evaluator a new
  // sandbox child (the sandbox logs each replacement), seconds where a candidate of the demo's
  // size takes tens of milliseconds. Runs that meet different numbers of them differ in
  // throughput more than their evaluator counts make them.
  int contexts_lost = 0;
  // Per committed generation that reported its search: its number, the search's wall and CPU
  // milliseconds.
  struct GenerationSearch {
    int generation = 0;
    double wall_ms = 0, cpu_ms = 0;
    // The CPU's parts (proposing, taking results in, writing run.h5); -1 in logs older than
    // the progress lines that give them.
    double proposals_ms = -1, results_ms = -1, write_ms = -1;
  };
  std::vector<GenerationSearch> searches;
  std::string last_llm;           // the last progress line's LLM part
  int exit_code = 0;
  double throughput() const { return generation_seconds > 0 ? candidates / generation_seconds : 0; }
  double busy() const { return generation_seconds > 0 ? busy_weighted / generation_seconds : 0; }
  double steady_busy() const {
    return steady_seconds > 0 ? steady_busy_weighted / steady_seconds : 0;
  }
  double search_share() const {
    return generation_seconds > 0 ? search_seconds / generation_seconds : 0;
  }
  double search_cpu_ms_per_candidate() const {
    return candidates > 0 ? 1e3 * search_cpu_seconds / candidates : 0;
  }
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    std::fprintf(stderr, "tune_scaling: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  return text.str();
}

// A YAML single-quoted scalar: kernel names such as '#0' (the capture's first kernel) start a
// comment unquoted.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// What a job's log says of its generations (r3-mpi's progress lines).
Measured read_log(const std::string& log) {
  Measured m;
  const std::regex progress(
      R"(generation (\d+): (\d+) candidates, (\d+) ok.*evaluators busy (\d+)%; ([0-9.e+-]+) s)");
  const std::regex llm(R"(; (LLM: [^;]*);)");
  const std::regex search(R"(; search ([0-9.e+-]+) ms \(CPU ([0-9.e+-]+) ms[:)])");
  const std::regex parts(
      R"(: proposals ([0-9.e+-]+), results ([0-9.e+-]+), run\.h5 ([0-9.e+-]+)\))");
  std::ifstream in(log);
  bool proposing = true;
  for (std::string line; std::getline(in, line);) {
    std::smatch match;
    if (line.find("the search stopped proposing") != std::string::npos) proposing = false;
    if (line.find("replaced after a lost context") != std::string::npos) ++m.contexts_lost;
    if (!std::regex_search(line, match, progress)) continue;
    const int generation = std::stoi(match[1]);
    const double seconds = std::stod(match[5]);
    ++m.generations;
    m.candidates += std::stoi(match[2]);
    m.ok += std::stoi(match[3]);
    m.generation_seconds += seconds;
    m.busy_weighted += seconds * std::stoi(match[4]) / 100.0;
    // The first generation's time includes the evaluators' start.
    if (proposing && m.generations > 1) {
      m.steady_seconds += seconds;
      m.steady_busy_weighted += seconds * std::stoi(match[4]) / 100.0;
    }
    if (std::regex_search(line, match, search)) {
      m.search_seconds += std::stod(match[1]) / 1e3;
      m.search_cpu_seconds += std::stod(match[2]) / 1e3;
      m.searches.push_back({generation, std::stod(match[1]), std::stod(match[2])});
      if (std::regex_search(line, match, parts)) {
        m.searches.back().proposals_ms = std::stod(match[1]);
        m.searches.back().results_ms = std::stod(match[2]);
        m.searches.back().write_ms = std::stod(match[3]);
      }
    }
    if (std::regex_search(line, match, llm)) m.last_llm = match[1];
  }
  return m;
}

Measured run(const Options& o, int k, const std::string& endpoint, const fs::path& dir) {
  const fs::path yaml =
      dir / ("tune-" + std::to_string(k) + (endpoint.empty() ? "" : "-llm") + ".yaml");
  {
    std::ofstream out(yaml);
    out << "capture: " << fs::absolute(o.capture).string() << "\nkernels:\n";
    for (std::size_t i = 0; i < o.kernels.size(); ++i)
      out << "  - name: " << quoted(o.kernels[i])
          << "\n    source: " << quoted(fs::absolute(o.sources[i]).string()) << "\n";
    // The evaluations end the run, not the default of 100 generations: with candidates of a
    // few tens of ms that would end it before the first LLM answer.
    out << "budget:\n  evaluations: " << o.per_evaluator * k
        << "\n  generations: 1000000\n  wall_time: 30m\n"
        << "timing:\n  confirm_top: 0\n  standby_sandbox: " << (o.standby ? "true" : "false")
        << "\n"
        << "output:\n  directory: " << (dir / yaml.stem()).string() << "\n";
    if (o.simulate)
      out << "backend: simulate\nsimulate:\n  compile: " << o.compile_time << "s\n  run: "
          << o.run_time << "s\n  lost_rate: " << o.lost_rate << "\n  lost_time: " << o.lost_time
          << "s\n  prepare: " << o.prepare_time << "s\n";
    out << o.append;
    if (!endpoint.empty())
      out << "llm:\n  endpoint: " << endpoint << "\n  model: bench\n  timeout: 60s\n";
  }
  const std::string log = (dir / (yaml.stem().string() + ".log")).string();
  // Unbound, whatever k: Open MPI binds each rank to one core for two ranks or fewer and to a
  // socket from three on, which made the one-evaluator runs' candidates 2-3x slower (its
  // sandbox and compiles on one core) and every efficiency over one evaluator look too good.
  const std::string command = o.mpirun + " -n " + std::to_string(k + 1) +
                              " --oversubscribe --bind-to none " + R3_BENCH_R3_MPI + " " +
                              yaml.string() + " > " + log + " 2>&1";
  const auto start = Clock::now();
  const int status = std::system(command.c_str());
  Measured m = read_log(log);
  m.wall = std::chrono::duration<double>(Clock::now() - start).count();
  m.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  std::ifstream candidates(dir / yaml.stem() / "candidates.csv");
  for (std::string line; std::getline(candidates, line);)
    m.llm_candidates += line.find(",LLM rewrite") != std::string::npos ||
                        line.find(",\"LLM rewrite") != std::string::npos;
  if (m.exit_code != 0)
    std::fprintf(stderr, "tune_scaling: %s exited with %d; its output is in %s\n", command.c_str(),
                 m.exit_code, log.c_str());
  return m;
}

// The source a prompt showed (evolve/prompts/user.txt: "Current source:" and a fenced block),
// as a model rewriting it would start from: for a kernel cut from an application's file, the
// kernel's unit, not the file. Empty when the request holds none.
std::string prompted_source(const std::string& body) {
  const nlohmann::json request = nlohmann::json::parse(body, nullptr, false);
  if (!request.is_object() || !request.contains("messages") || !request["messages"].is_array() ||
      request["messages"].empty())
    return "";
  const nlohmann::json& last = request["messages"].back();
  if (!last.is_object() || !last.contains("content") || !last["content"].is_string()) return "";
  const std::string content = last["content"].get<std::string>();
  const std::string label_text = "Current source:\n";
  const std::size_t label = content.find(label_text + "```");
  if (label == std::string::npos) return "";
  const std::size_t begin = content.find('\n', label + label_text.size());
  const std::size_t end = content.find("\n```", begin == std::string::npos ? label : begin + 1);
  if (begin == std::string::npos || end == std::string::npos) return "";
  return content.substr(begin + 1, end - begin - 1);
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

// A line through (generation, ms) points by Theil and Sen: the median of the pairwise slopes,
// and the median of what each point leaves for the intercept. The few slow generations (a fit
// done in place, a new source's parse) do not pull it as they pull a least-squares line.
struct Line {
  double intercept = 0, slope = 0;
  double at(double x) const { return intercept + slope * x; }
};

Line theil_sen(const std::vector<std::pair<double, double>>& points) {
  std::vector<double> slopes;
  slopes.reserve(points.size() * (points.size() - 1) / 2);
  for (std::size_t i = 0; i < points.size(); ++i)
    for (std::size_t j = i + 1; j < points.size(); ++j)
      if (points[j].first != points[i].first)
        slopes.push_back((points[j].second - points[i].second) /
                         (points[j].first - points[i].first));
  Line line;
  if (slopes.empty()) return line;
  line.slope = r3::report::median(std::move(slopes));
  std::vector<double> intercepts;
  for (const auto& [x, y] : points) intercepts.push_back(y - line.slope * x);
  line.intercept = r3::report::median(std::move(intercepts));
  return line;
}

// The trend of rank 0's search time per generation from `from` to `to` (wall or CPU, `value`):
// the Theil-Sen line's values at both ends and their ratio, with a 90% interval for the ratio
// from a moving-block bootstrap (blocks of 10 consecutive generations, which keeps the
// correlation between neighbouring generations: a fit's cost falls on the ones after it). The
// windows' medians compare 40 generations with 100; the line uses every generation between.
void print_search_trend(const Measured& m, int from, int to, const char* what,
                        double Measured::GenerationSearch::*value) {
  std::vector<std::pair<double, double>> points;
  for (const Measured::GenerationSearch& g : m.searches)
    if (g.generation >= from && g.generation <= to) points.push_back({g.generation, g.*value});
  constexpr std::size_t kBlock = 10;
  if (points.size() < 4 * kBlock) return;
  std::sort(points.begin(), points.end());
  auto ratio = [&](const Line& line) { return line.at(to) / line.at(from); };
  const Line line = theil_sen(points);
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<std::size_t> start(0, points.size() - kBlock);
  std::vector<double> ratios;
  for (int resample = 0; resample < 400; ++resample) {
    std::vector<std::pair<double, double>> drawn;
    while (drawn.size() < points.size()) {
      const std::size_t first = start(rng);
      drawn.insert(drawn.end(), points.begin() + static_cast<long>(first),
                   points.begin() + static_cast<long>(first + kBlock));
    }
    drawn.resize(points.size());
    ratios.push_back(ratio(theil_sen(drawn)));
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf(
      "    trend over generations %d-%d (Theil-Sen, %s): %.1f -> %.1f ms, %.2fx (90%%: "
      "%.2f-%.2fx, block bootstrap)\n",
      from, to, what, line.at(from), line.at(to), ratio(line), ratios[ratios.size() / 20],
      ratios[ratios.size() - 1 - ratios.size() / 20]);
}

// Rank 0's search per generation in each window [bounds[i], bounds[i+1]) of generations that
// the run reached, the last window's medians over the first's, and the trend through all of
// them (print_search_trend).
void print_search_windows(const Measured& m, const std::vector<int>& bounds) {
  std::printf("  rank 0's search per generation, ms (median / mean; the CPU's parts as means):\n");
  struct Window {
    int from, to;
    double wall, cpu;
  };
  std::vector<Window> printed;
  for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
    std::vector<double> wall, cpu, proposals, results, write;
    for (const Measured::GenerationSearch& g : m.searches)
      if (g.generation >= bounds[i] && g.generation < bounds[i + 1]) {
        wall.push_back(g.wall_ms);
        cpu.push_back(g.cpu_ms);
        if (g.proposals_ms < 0) continue;
        proposals.push_back(g.proposals_ms);
        results.push_back(g.results_ms);
        write.push_back(g.write_ms);
      }
    if (wall.empty()) continue;
    std::printf("    generations %4d-%-4d %4zu gens: wall %6.1f / %6.1f   CPU %6.1f / %6.1f",
                bounds[i], bounds[i + 1] - 1, wall.size(), r3::report::median(wall), mean(wall),
                r3::report::median(cpu), mean(cpu));
    // Means, which add up to the CPU's mean: where the time goes, and which part grows.
    if (!proposals.empty())
      std::printf("  (proposals %.1f, results %.1f, run.h5 %.1f)", mean(proposals), mean(results),
                  mean(write));
    std::printf("\n");
    printed.push_back(
        {bounds[i], bounds[i + 1] - 1, r3::report::median(wall), r3::report::median(cpu)});
  }
  if (printed.size() >= 2 && printed.front().wall > 0 && printed.front().cpu > 0)
    std::printf("    generations %d-%d over %d-%d (medians): wall %.2fx, CPU %.2fx\n",
                printed.back().from, printed.back().to, printed.front().from, printed.front().to,
                printed.back().wall / printed.front().wall,
                printed.back().cpu / printed.front().cpu);
  if (printed.size() >= 2) {
    print_search_trend(m, printed.front().from, printed.back().to, "wall",
                       &Measured::GenerationSearch::wall_ms);
    print_search_trend(m, printed.front().from, printed.back().to, "CPU",
                       &Measured::GenerationSearch::cpu_ms);
  }
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  for (const std::string& item : split(text)) out.push_back(std::stoi(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tune_scaling: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--capture") {
      o.capture = value();
    } else if (arg == "--kernel") {
      o.kernels = split(value());
    } else if (arg == "--source") {
      o.sources.clear();
      for (const std::string& file : split(value())) o.sources.emplace_back(file);
    } else if (arg == "--evaluators") {
      o.evaluators = parse_list(value());
    } else if (arg == "--per-evaluator") {
      o.per_evaluator = std::stoi(value());
    } else if (arg == "--llm-delay") {
      o.llm_delay = std::stod(value());
    } else if (arg == "--mpirun") {
      o.mpirun = value();
    } else if (arg == "--simulate") {
      o.simulate = true;
    } else if (arg == "--compile-time") {
      o.compile_time = std::stod(value());
    } else if (arg == "--run-time") {
      o.run_time = std::stod(value());
    } else if (arg == "--lost-rate") {
      o.lost_rate = std::stod(value());
    } else if (arg == "--lost-time") {
      o.lost_time = std::stod(value());
    } else if (arg == "--append") {
      o.append = read_file(value());
      if (!o.append.empty() && o.append.back() != '\n') o.append += '\n';
    } else if (arg == "--prepare-time") {
      o.prepare_time = std::stod(value());
    } else if (arg == "--standby") {
      o.standby = true;
    } else if (arg == "--keep") {
      o.keep = value();
    } else if (arg == "--search-windows") {
      o.search_windows = parse_list(value());
      if (o.search_windows.size() < 2 ||
          !std::is_sorted(o.search_windows.begin(), o.search_windows.end())) {
        std::fprintf(stderr,
                     "tune_scaling: --search-windows needs two or more generations in "
                     "increasing order, e.g. 10,50,100,500\n");
        return 2;
      }
    } else if (arg == "--search-log") {
      o.search_logs.emplace_back(value());
    } else if (arg == "--no-llm") {
      o.llm = {false};
    } else if (arg == "--llm-only") {
      o.llm = {true};
    } else {
      std::printf(
          "usage: tune_scaling --capture FILE.h5 --kernel NAME[,NAME...] --source FILE[,FILE...]\n"
          "                    [--evaluators 1,2,4]\n"
          "                    [--per-evaluator 48] [--llm-delay 5] [--mpirun mpirun]\n"
          "                    [--simulate [--compile-time 1] [--run-time 2] [--lost-rate 0]\n"
          "                    [--lost-time 2.7] [--prepare-time 0]] [--no-llm | --llm-only]\n"
          "                    [--standby] [--keep DIR] [--append FILE]\n"
          "                    [--search-windows 10,50,100,200,300,400,500]\n"
          "       tune_scaling --search-windows G0,G1,... --search-log LOG [--search-log LOG...]\n"
          "  runs r3-mpi with each evaluator count, without and with a local LLM endpoint that\n"
          "  answers after --llm-delay seconds, and prints candidates/s, the evaluators' busy\n"
          "  fraction (over the whole search, and while it still proposed: 'steady'), the scaling\n"
          "  efficiency and the LLM answers evaluated. --simulate: the simulate backend, "
          "candidates of --compile-time\n"
          "  and --run-time seconds (+-30%%) that run nothing, for 16-256 evaluators on one "
          "machine;\n"
          "  --lost-rate of them lose their GPU context and cost --lost-time seconds (as on "
          "CUDA),\n"
          "  and a new sandbox child takes --prepare-time seconds to start.\n"
          "  --standby: timing.standby_sandbox on (a prepared child replaces a lost one at once).\n"
          "  --keep DIR: each run's tune file, log and results stay in DIR (else they are "
          "removed)\n"
          "  --append FILE: YAML added to every run's tune file (sections it does not write,\n"
          "  such as search or verify), to measure an option on and off\n"
          "  --search-windows G0,G1,...: after each run, rank 0's search time per generation\n"
          "  (wall and CPU, median and mean) in each window [Gi, Gi+1) of generations, and the\n"
          "  last window's medians over the first's, and the trend through every generation\n"
          "  from G0 to the last (a Theil-Sen line, with a block-bootstrap interval of its\n"
          "  ratio): whether its cost grows with the history\n"
          "  --search-log LOG: read a job's log (one --keep kept) and print only that, running\n"
          "  nothing\n"
          "  Several kernels (one source for all, or one each) are tuned together in each run.\n");
      return arg == "--help" ? 0 : 2;
    }
  }
  if (!o.search_logs.empty()) {
    if (o.search_windows.empty()) {
      std::fprintf(stderr, "tune_scaling: --search-log needs --search-windows\n");
      return 2;
    }
    for (const fs::path& log : o.search_logs) {
      if (!fs::is_regular_file(log)) {
        std::fprintf(stderr, "tune_scaling: --search-log %s: no such file\n", log.c_str());
        return 2;
      }
      const Measured m = read_log(log.string());
      std::printf("%s: %d generations\n", log.c_str(), m.generations);
      print_search_windows(m, o.search_windows);
    }
    return 0;
  }
  if (o.capture.empty() || o.kernels.empty() || o.sources.empty()) {
    std::fprintf(stderr, "tune_scaling: --capture, --kernel and --source are required\n");
    return 2;
  }
  if (o.sources.size() == 1) o.sources.resize(o.kernels.size(), o.sources.front());
  if (o.sources.size() != o.kernels.size()) {
    std::fprintf(stderr, "tune_scaling: %zu kernels and %zu sources: give one source, or one per kernel\n",
                 o.kernels.size(), o.sources.size());
    return 2;
  }
  if (geteuid() == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  const std::string source = read_file(o.sources.front());
  const fs::path dir = !o.keep.empty() ? fs::absolute(o.keep)
                                       : fs::temp_directory_path() /
                                             ("r3-tune-scaling-" + std::to_string(getpid()));
  fs::create_directories(dir);

  const auto delay = std::chrono::milliseconds(static_cast<long>(o.llm_delay * 1000));
  // Each answer is the prompt's source (the first --source file where the prompt shows none)
  // with a table of its own: enough new tokens that the search's near-duplicate filter (5-gram
  // similarity) takes it for a new source, as it would a real rewrite.
  auto answer = [&](const std::string& shown, std::size_t index) {
    std::string table = "static const int r3_bench_answer_" + std::to_string(index) + "[] = {";
    for (std::size_t i = 0; i < 96; ++i) table += std::to_string(index * 1000 + i * 7) + ", ";
    return "```cuda\n" + (shown.empty() ? source : shown) + "\n" + table + "};\n```\n";
  };
  r3::bench::ChatServer server([&](const r3::bench::ReceivedRequest& request, std::size_t index) {
    auto reply = r3::bench::ChatReply::completion(answer(prompted_source(request.body), index));
    reply.delay = delay;
    return reply;
  });

  std::printf("%s\n", o.simulate ? ("simulate backend: compile " + std::to_string(o.compile_time) +
                                        " s, run " + std::to_string(o.run_time) + " s (+-30%)")
                                           .c_str()
                                     : "real backend of the capture");
  std::printf("%-10s %-14s %6s %6s %10s %9s %6s %6s %8s %7s %9s %6s %8s %8s  %s\n", "evaluators",
              "LLM", "gens", "cands", "gen time", "cands/s", "busy", "eff", "steady", "search",
              "ms/cand", "lost", "wall", "LLM eval", "LLM answers");
  for (bool with_llm : o.llm) {
    double single = 0;
    for (int k : o.evaluators) {
      Measured m = run(o, k, with_llm ? server.endpoint() : std::string(), dir);
      if (k == o.evaluators.front()) single = m.throughput() / k;
      std::printf(
          "%-10d %-14s %6d %6d %9.1fs %9.2f %5.0f%% %6.2f %7.0f%% %6.0f%% %9.2f %6d %7.1fs %8d  "
          "%s\n",
          k,
          with_llm ? ("answers " + std::to_string(o.llm_delay).substr(0, 4) + "s").c_str() : "none",
          m.generations, m.candidates, m.generation_seconds, m.throughput(), 100 * m.busy(),
          single > 0 ? m.throughput() / (k * single) : 0, 100 * m.steady_busy(),
          100 * m.search_share(), m.search_cpu_ms_per_candidate(), m.contexts_lost, m.wall,
          m.llm_candidates,
          m.last_llm.c_str());
      if (!o.search_windows.empty()) print_search_windows(m, o.search_windows);
      std::fflush(stdout);
      if (m.exit_code != 0) return 1;
    }
  }
  std::printf("chat requests answered by the local endpoint: %zu\n", server.requests().size());
  std::error_code ignored;
  if (o.keep.empty()) fs::remove_all(dir, ignored);
  return 0;
}
