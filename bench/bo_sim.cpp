// bench/bo_sim: how fast Bayesian optimisation finds good configurations of measured tuning
// tables, against random search with the same budget, over many seeds; and how long proposing a
// batch of 64 takes with 1000 observations. Every figure is measured in this one run.
//
// Usage: bo_sim [--seeds N] [--budget N] [--batch Q] [--acquisition log_ei|ucb]
//               [--initial N] [--no-timing] TABLE.csv...
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "r3/bo/table.hpp"
#include "r3/error.hpp"

namespace {

using namespace r3::bo;

struct Settings {
  std::size_t seeds = 20;
  std::size_t budget = 0;  // 0: min(500, points in the space)
  std::size_t batch = 1;
  std::size_t initial = 8;
  Acquisition acquisition = Acquisition::log_ei;
  bool timing = true;
  std::vector<std::string> tables;
};

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seeds") s.seeds = std::stoul(next());
    else if (a == "--budget") s.budget = std::stoul(next());
    else if (a == "--batch") s.batch = std::stoul(next());
    else if (a == "--initial") s.initial = std::stoul(next());
    else if (a == "--acquisition") s.acquisition = next() == "ucb" ? Acquisition::ucb : Acquisition::log_ei;
    else if (a == "--no-timing") s.timing = false;
    else if (a == "--help" || a == "-h") {
      std::printf("usage: bo_sim [--seeds N] [--budget N] [--batch Q] [--acquisition log_ei|ucb] "
                  "[--initial N] [--no-timing] TABLE.csv...\n");
      std::exit(0);
    } else s.tables.push_back(a);
  }
  if (s.tables.empty()) {
    std::fprintf(stderr, "bo_sim: give at least one table (bench/data/*.csv)\n");
    std::exit(2);
  }
  return s;
}

double space_points(const Space& space) {
  double points = 1;
  for (const Parameter& p : space.parameters()) points *= static_cast<double>(p.choices());
  return points;
}

// Median of evaluations-to-target, a run that never got there counting as budget + 1.
std::string median(std::vector<std::size_t> values, std::size_t budget, double* out) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  const double m = n % 2 ? static_cast<double>(values[n / 2])
                         : 0.5 * static_cast<double>(values[n / 2 - 1] + values[n / 2]);
  *out = m;
  char text[32];
  if (m > static_cast<double>(budget)) {
    std::snprintf(text, sizeof text, ">%zu", budget);
  } else {
    std::snprintf(text, sizeof text, "%.1f", m);
  }
  return text;
}

std::string ratio(double random, double bo, std::size_t budget) {
  char text[32];
  if (bo > static_cast<double>(budget)) return "-";
  std::snprintf(text, sizeof text, random > static_cast<double>(budget) ? ">%.1f" : "%.1f", random / bo);
  return text;
}

void simulate(const Table& table, const Settings& settings) {
  const double points = space_points(table.space());
  const std::size_t budget =
      settings.budget > 0 ? settings.budget : static_cast<std::size_t>(std::min(500.0, points));
  std::vector<std::size_t> bo5(settings.seeds), bo1(settings.seeds), random5(settings.seeds),
      random1(settings.seeds);
  std::atomic<std::size_t> next{0};
  std::atomic<double> bo_seconds{0};
  auto worker = [&] {
    for (std::size_t seed; (seed = next++) < settings.seeds;) {
      Options options;
      options.seed = seed + 1;
      options.initial_samples = settings.initial;
      options.acquisition = settings.acquisition;
      auto start = std::chrono::steady_clock::now();
      Trace bo = run_bayesian(table, options, budget, settings.batch);
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      bo_seconds = bo_seconds + elapsed;
      Trace random = run_random(table, 1000 + seed, budget);
      bo5[seed] = evaluations_to_reach(bo, table.optimum() * 1.05).value_or(budget + 1);
      bo1[seed] = evaluations_to_reach(bo, table.optimum() * 1.01).value_or(budget + 1);
      random5[seed] = evaluations_to_reach(random, table.optimum() * 1.05).value_or(budget + 1);
      random1[seed] = evaluations_to_reach(random, table.optimum() * 1.01).value_or(budget + 1);
    }
  };
  std::vector<std::thread> threads;
  const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < workers; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();

  double b5, b1, r5, r1;
  std::string b5s = median(bo5, budget, &b5), b1s = median(bo1, budget, &b1);
  std::string r5s = median(random5, budget, &r5), r1s = median(random1, budget, &r1);
  std::string name = table.path().filename().string();
  std::printf("%-22s %6zu %8.0f %7zu %8.4g %7s %9s %7s %7s %9s %7s %8.3f\n", name.c_str(),
              table.space().parameters().size(), points, table.failed_rows(), table.optimum(),
              b5s.c_str(), r5s.c_str(), ratio(r5, b5, budget).c_str(), b1s.c_str(), r1s.c_str(),
              ratio(r1, b1, budget).c_str(),
              bo_seconds.load() / static_cast<double>(settings.seeds) / static_cast<double>(budget));
  std::fflush(stdout);
}

// Proposing 64 configurations after 1000 observations of the table with the largest space.
void time_batch(const Table& table) {
  Options options;
  options.seed = 7;
  Optimizer optimizer(table.space(), options);
  std::mt19937_64 rng(11);
  std::unordered_set<r3::Hash128> seen;
  while (optimizer.observations().size() < 1000) {
    Configuration c = table.space().sample(rng);
    if (seen.insert(c.hash()).second) optimizer.observe(c, table.evaluate(c));
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<Configuration> batch = optimizer.propose(64);
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Optimizer::Timing& t = optimizer.last_timing();
  std::printf("\nproposing a batch of %zu with %zu observations (%s): %.3f s "
              "(fit %.3f s, candidates %.3f s, selection %.3f s)\n",
              batch.size(), optimizer.observations().size(), table.path().filename().c_str(), total,
              t.fit, t.candidates, t.select);
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings = parse(argc, argv);
  try {
    std::vector<Table> tables;
    for (const std::string& path : settings.tables) tables.push_back(Table::load_csv(path));
    std::printf("Bayesian optimisation (%s, %zu initial, batch %zu) against random search, %zu seeds;\n"
                "evaluations to get within 5%% and 1%% of the table's optimum (median over seeds)\n\n",
                settings.acquisition == Acquisition::log_ei ? "log-EI" : "UCB", settings.initial,
                settings.batch, settings.seeds);
    std::printf("%-22s %6s %8s %7s %8s %7s %9s %7s %7s %9s %7s %8s\n", "table", "params", "points",
                "failed", "optimum", "BO 5%", "random 5%", "ratio", "BO 1%", "random 1%", "ratio",
                "s/eval");
    for (const Table& table : tables) simulate(table, settings);
    if (settings.timing) {
      const Table* largest = &tables.front();
      for (const Table& t : tables) {
        if (space_points(t.space()) > space_points(largest->space())) largest = &t;
      }
      time_batch(*largest);
    }
  } catch (const r3::Error& e) {
    std::fprintf(stderr, "bo_sim: %s\n", e.what());
    return 1;
  }
  return 0;
}
