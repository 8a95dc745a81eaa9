// bench/bo_cost: what one proposal costs rank 0 as a search's history grows, on spaces shaped
// like the job's levels (the host compiler level with an LLVM pass sequence, the CUDA compiler
// level, a launch shape, source parameters). Each run proposes and observes one batch at a time,
// as the job does, up to --observations; the table gives the mean and the largest time per
// proposed candidate in windows of the history, and where it went (fit, pool, batch). Times
// come from a fixed synthetic function with failures, so that only the optimizer is timed.
//
// Usage: bo_cost [--observations N] [--batch Q] [--space NAME]... [--seed S]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "r3/bo/optimizer.hpp"
#include "r3/error.hpp"

namespace {

using namespace r3::bo;

struct Settings {
  std::size_t observations = 2000;
  std::size_t batch = 1;
  std::uint64_t seed = 1;
  std::vector<std::string> spaces;
};

std::vector<double> powers_of_two(int from, int to) {
  std::vector<double> out;
  for (int e = from; e <= to; ++e) out.push_back(std::ldexp(1.0, e));
  return out;
}

struct Problem {
  std::string name;
  Space space;
};

std::vector<Problem> problems() {
  std::vector<Problem> out;
  {
    std::vector<std::string> passes;
    for (const char* p : {"instcombine", "licm", "gvn", "sroa", "loop-unroll", "simplifycfg",
                          "early-cse", "reassociate", "loop-rotate", "indvars", "dse", "adce",
                          "sccp", "jump-threading", "mem2reg", "loop-vectorize", "slp-vectorizer",
                          "correlated-propagation", "tailcallelim", "memcpyopt", "bdce",
                          "loop-idiom", "loop-deletion", "mldst-motion", "newgvn", "aggressive-instcombine"})
      passes.emplace_back(p);
    std::vector<Parameter> parameters{Parameter::ordinal("opt", {0, 1, 2, 3}),
                                      Parameter::categorical("fast_math", {"off", "on"}),
                                      Parameter::categorical("unroll", {"default", "off"}),
                                      Parameter::categorical("vectorize", {"default", "off"}),
                                      Parameter::sequence("passes", passes, 8, true)};
    out.push_back({"host-compiler", Space(std::move(parameters))});
  }
  {
    std::vector<Parameter> parameters{Parameter::ordinal("ptxas_opt", {0, 1, 2, 3}),
                                      Parameter::categorical("fmad", {"on", "off"}),
                                      Parameter::categorical("ftz", {"off", "on"}),
                                      Parameter::categorical("prec_div", {"on", "off"}),
                                      Parameter::ordinal("max_registers", {0, 32, 64, 96, 128, 168, 255}),
                                      Parameter::categorical("cache_mode", {"default", "ca", "cg"})};
    out.push_back({"cuda-compiler", Space(std::move(parameters))});
  }
  {
    std::vector<Parameter> parameters{Parameter::ordinal("bx", powers_of_two(0, 10)),
                                      Parameter::ordinal("by", powers_of_two(0, 10)),
                                      Parameter::ordinal("TILE", powers_of_two(2, 6)),
                                      Parameter::ordinal("UNROLL", {1, 2, 3, 4, 6, 8})};
    out.push_back({"launch+source", Space(std::move(parameters), {"bx * by <= 1024", "bx * by >= 32"})});
  }
  return out;
}

// A fixed function of the configuration: a bowl in the numeric parameters, a cost per
// categorical value, the pass sequence's helpful and harmful items; about 1 in 10 fail.
Outcome synthetic(const Space& space, const Configuration& c) {
  const auto& parameters = space.parameters();
  double t = 1.0;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const Parameter& p = parameters[i];
    if (c.values[i].empty()) continue;
    if (p.kind == Kind::ordinal) {
      const double x = static_cast<double>(c.values[i][0]) / static_cast<double>(p.numbers.size());
      const double centre = 0.3 + 0.4 * static_cast<double>(i % 3) / 2;
      t += 2.0 * (x - centre) * (x - centre);
    } else if (p.kind == Kind::categorical) {
      t += 0.1 * static_cast<double>((c.values[i][0] + static_cast<int>(i)) % 3);
    } else {
      for (std::size_t k = 0; k < c.values[i].size(); ++k) {
        const int item = c.values[i][k];
        t += item % 5 == 0 ? -0.04 : (item % 7 == 0 ? 0.08 : 0.01);
      }
    }
  }
  if (c.hash().low % 10 == 0) return Outcome::failed("compile error");
  return Outcome::success(std::max(0.05, t) * (1 + 0.02 * static_cast<double>(c.hash().high % 100) / 100));
}

using Clock = std::chrono::steady_clock;

struct Window {
  std::size_t from, to;  // history sizes
  double total = 0, worst = 0, fit = 0, condition = 0, pool = 0, select = 0;
  double points = 0, new_points = 0;
  std::size_t candidates = 0;
};

void run(const Problem& problem, const Settings& settings) {
  Options options;
  options.seed = settings.seed;
  Optimizer optimizer(problem.space, options);
  std::vector<Window> windows;
  std::size_t from = 0;
  for (std::size_t to : {50, 200, 500, 1000, 1500, 2000, 3000, 4000, 6000, 8000}) {
    if (from >= settings.observations) break;
    windows.push_back({from, std::min<std::size_t>(to, settings.observations)});
    from = to;
  }
  while (optimizer.observations().size() < settings.observations) {
    const std::size_t history = optimizer.observations().size();
    const auto start = Clock::now();
    std::vector<Configuration> proposed = optimizer.propose(settings.batch);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (proposed.empty()) {
      std::printf("%-14s the space ran out after %zu observations\n", problem.name.c_str(), history);
      break;
    }
    for (Window& w : windows) {
      if (history < w.from || history >= w.to) continue;
      const double each = seconds / static_cast<double>(proposed.size());
      w.total += seconds;
      w.worst = std::max(w.worst, each);
      const Optimizer::Timing& t = optimizer.last_timing();
      w.fit += t.fit;
      w.condition += t.condition;
      w.points += static_cast<double>(t.pool);
      w.new_points += static_cast<double>(t.new_points);
      w.pool += t.candidates;
      w.select += t.select;
      w.candidates += proposed.size();
    }
    for (const Configuration& c : proposed) optimizer.observe(c, synthetic(problem.space, c));
  }
  for (const Window& w : windows) {
    if (w.candidates == 0) continue;
    const double n = static_cast<double>(w.candidates);
    const double proposals = n / static_cast<double>(settings.batch);
    std::printf("%-14s %5zu-%-5zu %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %7.0f %7.0f\n",
                problem.name.c_str(), w.from, w.to, 1e3 * w.total / n, 1e3 * w.worst,
                1e3 * w.fit / n, 1e3 * w.condition / n, 1e3 * w.pool / n, 1e3 * w.select / n,
                w.points / proposals, w.new_points / proposals);
  }
  if (auto best = optimizer.best())
    std::printf("%-14s best time %.4f after %zu observations\n", problem.name.c_str(),
                best->outcome.time, optimizer.observations().size());
}

int usage(int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: bo_cost [options]\n"
               "  --observations N   history to grow to (default 2000)\n"
               "  --batch Q          candidates per proposal (default 1, as the job's levels\n"
               "                     mostly ask for one at a time)\n"
               "  --space NAME       host-compiler, cuda-compiler or launch+source (repeatable;\n"
               "                     default all)\n"
               "  --seed S           the optimizer's seed (default 1)\n");
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage(2));
      return argv[++i];
    };
    if (a == "--observations") settings.observations = std::stoul(next());
    else if (a == "--batch") settings.batch = std::max<std::size_t>(1, std::stoul(next()));
    else if (a == "--space") settings.spaces.push_back(next());
    else if (a == "--seed") settings.seed = std::stoull(next());
    else if (a == "--help" || a == "-h") return usage(0);
    else return usage(2);
  }
  try {
    std::printf("# ms per proposed candidate (batch %zu), by history size: mean, largest, and the\n"
                "# mean spent fitting hyperparameters, conditioning the models on the history, on the\n"
                "# candidate pool, and picking the batch; points scored per proposal, and how many of them\n"
                "# were new to the model\n",
                settings.batch);
    std::printf("%-14s %-11s %8s %8s %8s %8s %8s %8s %7s %7s\n", "space", "history", "mean", "max",
                "fit", "model", "pool", "batch", "points", "new");
    for (const Problem& p : problems()) {
      if (!settings.spaces.empty() &&
          std::find(settings.spaces.begin(), settings.spaces.end(), p.name) == settings.spaces.end())
        continue;
      run(p, settings);
    }
  } catch (const r3::Error& e) {
    std::fprintf(stderr, "bo_cost: %s\n", e.what());
    return 1;
  }
  return 0;
}
