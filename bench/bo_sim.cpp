// bench/bo_sim: how fast Bayesian optimisation finds good configurations of measured tuning
// tables, against random search with the same budget, over many seeds; and how long proposing a
// batch of 64 takes with 1000 observations. Every figure is measured in this one run.
//
// Usage: bo_sim [--seeds N] [--random-seeds N] [--budget N] [--batch Q]
//               [--acquisition log_ei|ucb|portfolio] [--ucb-beta B] [--handover E]
//               [--handover-beta B] [--handover-stall N] [--refine-stall N]
//               [--plateau-bisection T] [--pair-completion T] [--no-exploit-predicted]
//               [--exploit-from R] [--draws-for-log-ei]
//               [--initial N] [--no-centre-point]
//               [--trend V] [--quadratic-trend V]
//               [--draws K] [--draws-until N]
//               [--rank-warp N] [--known-correlation R] [--constraint-quantities]
//               [--lengthscale-centre C] [--inert-tolerance T]
//               [--candidates N] [--local-starts N]
//               [--local-points N] [--fit-evaluations N] [--fit-lag N]
//               [--gp-points N]
//               [--min-feasibility P] [--no-timing] [--verbose]
//               [--constraint EXPR]... [--constraints FILE] TABLE.csv...
//
// Known constraints (tune.yaml's expressions over the table's column names) limit the space
// both searches draw from, as a tuning run told them would: from --constraint, --constraints
// FILE (one per line), and TABLE.constraints beside a table (that table only). Rows that break
// them are left out, and random search draws from the configurations they allow.
// Each search runs until it is within 1% of the table's optimum (all the figures need), BO for
// at most --budget evaluations, random search for at most the whole space: its medians are
// exact, over many more seeds (random runs cost nothing), so that the baseline is not luck.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
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
  std::size_t random_seeds = 200;
  std::size_t budget = 500;
  std::size_t batch = 1;
  std::size_t initial = Options{}.initial_samples;
  Acquisition acquisition = Acquisition::portfolio;
  Options defaults;  // the optimiser's other settings (--candidates, --local-starts, ...)
  bool timing = true;
  bool verbose = false;  // print every BO seed's evaluations to 5% and 1%
  std::vector<std::string> constraints;  // for every table (--constraint, --constraints)
  std::vector<std::string> tables;
};

// --acquisition's values and how the summary names them.
struct AcquisitionName {
  const char* option;
  const char* label;
  Acquisition value;
};
constexpr AcquisitionName kAcquisitions[] = {
    {"log_ei", "log-EI", Acquisition::log_ei},
    {"ucb", "UCB", Acquisition::ucb},
    {"portfolio", "log-EI/UCB portfolio", Acquisition::portfolio}};

const char* label_of(Acquisition a) {
  for (const AcquisitionName& n : kAcquisitions)
    if (n.value == a) return n.label;
  return "?";
}

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
    auto count = [&]() -> std::size_t {
      const std::string text = next();
      char* end = nullptr;
      const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || text[0] == '-') {
        std::fprintf(stderr, "%s needs a non-negative whole number, not '%s'\n", a.c_str(),
                     text.c_str());
        std::exit(2);
      }
      return static_cast<std::size_t>(value);
    };
    // A finite number in [0, most].
    auto number = [&](double most) {
      const std::string text = next();
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !(value >= 0) || !std::isfinite(value) ||
          value > most) {
        std::fprintf(stderr, "%s needs a number from 0 to %g, not '%s'\n", a.c_str(), most,
                     text.c_str());
        std::exit(2);
      }
      return value;
    };
    if (a == "--seeds")
      s.seeds = count();
    else if (a == "--random-seeds")
      s.random_seeds = count();
    else if (a == "--budget")
      s.budget = count();
    else if (a == "--batch")
      s.batch = count();
    else if (a == "--initial")
      s.initial = count();
    else if (a == "--no-centre-point")
      s.defaults.centre_point = false;
    else if (a == "--trend")
      s.defaults.trend = number(std::numeric_limits<double>::infinity());
    else if (a == "--quadratic-trend")
      s.defaults.quadratic_trend = number(std::numeric_limits<double>::infinity());
    else if (a == "--rank-warp")
      s.defaults.rank_warp = number(std::numeric_limits<double>::infinity());
    else if (a == "--ucb-beta")
      s.defaults.ucb_beta = number(std::numeric_limits<double>::infinity());
    else if (a == "--handover")
      s.defaults.handover_improvement = number(std::numeric_limits<double>::infinity());
    else if (a == "--handover-beta")
      s.defaults.handover_ucb_beta = number(std::numeric_limits<double>::infinity());
    else if (a == "--handover-stall")
      s.defaults.handover_stall = count();
    else if (a == "--refine-stall")
      s.defaults.refine_stall = count();
    else if (a == "--plateau-bisection")
      s.defaults.plateau_bisection = number(1);
    else if (a == "--pair-completion")
      s.defaults.pair_completion = number(10);
    else if (a == "--exploit-from")
      s.defaults.exploit_successes_per_parameter = number(100);
    else if (a == "--draws-for-log-ei")
      s.defaults.draws_for_log_ei = true;
    else if (a == "--no-exploit-predicted")
      s.defaults.exploit_predicted_improvement = false;
    else if (a == "--known-correlation")
      s.defaults.known_correlation = number(1);
    else if (a == "--constraint-quantities")
      s.defaults.constraint_quantities = true;
    else if (a == "--lengthscale-centre")
      s.defaults.lengthscale_centre = number(std::numeric_limits<double>::infinity());
    else if (a == "--inert-tolerance")
      s.defaults.inert_tolerance = number(1);
    else if (a == "--draws")
      s.defaults.hyperparameter_draws = count();
    else if (a == "--draws-until")
      s.defaults.hyperparameter_draws_until = count();
    else if (a == "--acquisition") {
      const std::string name = next();
      const auto* known = std::find_if(std::begin(kAcquisitions), std::end(kAcquisitions),
                                       [&](const AcquisitionName& n) { return name == n.option; });
      if (known == std::end(kAcquisitions)) {
        std::fprintf(stderr, "--acquisition is log_ei, ucb or portfolio, not '%s'\n",
                     name.c_str());
        std::exit(2);
      }
      s.acquisition = known->value;
    } else if (a == "--candidates")
      s.defaults.random_candidates = count();
    else if (a == "--local-starts")
      s.defaults.local_search_starts = count();
    else if (a == "--local-points")
      s.defaults.local_search_points = count();
    else if (a == "--fit-evaluations")
      s.defaults.fit_evaluations = static_cast<int>(count());
    else if (a == "--fit-lag")
      s.defaults.fit_lag = count();
    else if (a == "--gp-points")
      s.defaults.max_gp_points = count();
    else if (a == "--min-feasibility")
      s.defaults.min_feasibility = number(0.5);
    else if (a == "--no-timing")
      s.timing = false;
    else if (a == "--verbose")
      s.verbose = true;
    else if (a == "--constraint")
      s.constraints.push_back(next());
    else if (a == "--constraints") {
      const std::string file = next();
      try {
        for (std::string& c : load_constraints(file)) s.constraints.push_back(std::move(c));
      } catch (const r3::Error& e) {
        std::fprintf(stderr, "bo_sim: %s\n", e.what());
        std::exit(2);
      }
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: bo_sim [options] TABLE.csv...\n"
          "  --seeds N             BO runs, seeds 1..N (default 20)\n"
          "  --random-seeds N      random-search runs (default 200)\n"
          "  --budget N            most evaluations per BO run (default 500)\n"
          "  --batch Q             proposals per BO step (default 1)\n"
          "  --acquisition A       log_ei, ucb or portfolio (the two in turn; default)\n"
          "  --ucb-beta B          exploration weight of UCB (default %g)\n"
          "  --handover E          where the best expected improvement is below E (target\n"
          "                        standard deviations), log-EI's turn goes to UCB with\n"
          "                        --handover-beta; 0: off (default %g)\n"
          "  --handover-beta B     that UCB's exploration weight (default %g)\n"
          "  --handover-stall N    not after N observations without a new best\n"
          "                        (default %zu)\n"
          "  --refine-stall N      after N observations without a new best, UCB's picks\n"
          "                        try the best point's one-parameter changes (as many\n"
          "                        as there are parameters); 0: off (default %zu)\n"
          "  --plateau-bisection T where the latest step (a new best, or a later point)\n"
          "                        was within T (relative) of the best, the next pick goes\n"
          "                        half the way on from the best to the end of the step's\n"
          "                        range (or the nearest value measured on that line),\n"
          "                        else back past its other end; 0: off (default %g)\n"
          "  --pair-completion T   after --refine-stall observations without a new best,\n"
          "                        the first pick makes two one-parameter changes of the\n"
          "                        best at once, each measured within T (relative) of it\n"
          "                        (as many as there are parameters); 0: off (default %g)\n"
          "  --no-exploit-predicted  log-EI's turn keeps its own pick where the surrogate\n"
          "                        predicts a configuration faster than the best measured\n"
          "                        (by default it measures the fastest such prediction)\n"
          "  --exploit-from R      ... only from R successes per parameter (default %g)\n"
          "  --initial N           initial design points (default %zu)\n"
          "  --no-centre-point     the design's first point is random like the others,\n"
          "                        not the middle of every range\n"
          "  --trend V             prior variance of the surrogate's linear trend per\n"
          "                        parameter; 0: none (default %g)\n"
          "  --quadratic-trend V   centre of the prior on the weight of the trend's\n"
          "                        quadratic term; 0: none (default %g)\n"
          "  --rank-warp N         successes at which the GP's target weighs the times'\n"
          "                        ranks as much as their Box-Cox values; 0: Box-Cox\n"
          "                        alone (default %g)\n"
          "  --known-correlation R a candidate whose kernel correlation with a measured\n"
          "                        (or pending) point is at least R counts as known and\n"
          "                        ranks after the others; 0: off (default %g)\n"
          "  --constraint-quantities  the surrogate also takes the quantities the\n"
          "                        constraints bound (BX*BY of BX*BY<=1024) as inputs\n"
          "  --lengthscale-centre C  centre of the prior on the surrogate's lengthscales;\n"
          "                        0: sqrt(d) for d numeric inputs (default)\n"
          "  --inert-tolerance T   an input whose every change alone among the best quarter\n"
          "                        of the points moved the time by at most T (relative) is\n"
          "                        made irrelevant where the fit loses little; 0: off\n"
          "                        (default %g)\n"
          "  --draws K             while at most --draws-until successes are in, the\n"
          "                        acquisition is averaged over K draws of the\n"
          "                        surrogate's lengthscales; 0: the fit alone (default %zu)\n"
          "  --draws-until N       (default %zu)\n"
          "  --draws-for-log-ei    log-EI's turns average over the draws too (by default\n"
          "                        only UCB's do)\n"
          "  --candidates N        random candidates per proposal (default %zu)\n"
          "  --local-starts N      local searches per proposal (default %zu)\n"
          "  --local-points N      points the local searches score per proposal at 128\n"
          "                        GP rows, fewer beyond (as (128/rows)^2); 0: no limit\n"
          "                        (default %zu)\n"
          "  --fit-evaluations N   marginal-likelihood evaluations per fit (default %d)\n"
          "  --fit-lag N           observations the hyperparameters lag the history by\n"
          "                        (default 0: fitted to the history as it is)\n"
          "  --gp-points N         most observations the GP conditions on (default %zu)\n"
          "  --min-feasibility P   P(feasible) below which a point the feasibility model\n"
          "                        knows fails is not proposed; 0: propose all (default %g)\n"
          "  --no-timing           leave out the batch-of-64 timing\n"
          "  --verbose             print every BO seed's evaluations to 5%% and 1%%\n"
          "  --constraint EXPR     a known constraint over the tables' column names, as in\n"
          "                        tune.yaml (repeatable; e.g. 'block_size_x*block_size_y>=64')\n"
          "  --constraints FILE    known constraints, one per line ('#' comments)\n"
          "  A file TABLE.constraints beside a table adds its lines for that table.\n",
          Options{}.ucb_beta, Options{}.handover_improvement, Options{}.handover_ucb_beta,
          Options{}.handover_stall, Options{}.refine_stall, Options{}.plateau_bisection,
          Options{}.pair_completion, Options{}.exploit_successes_per_parameter,
          Options{}.initial_samples, Options{}.trend, Options{}.quadratic_trend,
          Options{}.rank_warp, Options{}.known_correlation, Options{}.inert_tolerance,
          Options{}.hyperparameter_draws, Options{}.hyperparameter_draws_until,
          Options{}.random_candidates, Options{}.local_search_starts, Options{}.local_search_points,
          Options{}.fit_evaluations, Options{}.max_gp_points, Options{}.min_feasibility);
      std::exit(0);
    } else
      s.tables.push_back(a);
  }
  if (s.seeds == 0 || s.random_seeds == 0 || s.batch == 0 || s.budget == 0) {
    std::fprintf(stderr,
                 "bo_sim: --seeds, --random-seeds, --batch and --budget must be at least 1\n");
    std::exit(2);
  }
  if (s.tables.empty()) {
    std::fprintf(stderr, "bo_sim: give at least one table (bench/data/*.csv)\n");
    std::exit(2);
  }
  return s;
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
  std::snprintf(text, sizeof text, "%.1f", random / bo);
  return text;
}

void simulate(const Table& table, const Settings& settings) {
  const auto points = static_cast<double>(table.points());
  const std::size_t budget = settings.budget;
  const auto space_size = static_cast<std::size_t>(points);
  const double target5 = table.optimum() * 1.05, target1 = table.optimum() * 1.01;
  std::vector<std::size_t> bo5(settings.seeds), bo1(settings.seeds);
  std::vector<std::size_t> random5(settings.random_seeds), random1(settings.random_seeds);
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> bo_evaluations{0};
  std::atomic<double> bo_seconds{0};
  auto worker = [&] {
    for (std::size_t job; (job = next++) < settings.seeds + settings.random_seeds;) {
      if (job < settings.seeds) {
        Options options = settings.defaults;
        options.seed = job + 1;
        options.initial_samples = settings.initial;
        options.acquisition = settings.acquisition;
        auto start = std::chrono::steady_clock::now();
        Trace bo = run_bayesian(table, options, budget, settings.batch, target1);
        bo_seconds =
            bo_seconds +
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        bo_evaluations += bo.size();
        bo5[job] = evaluations_to_reach(bo, target5).value_or(budget + 1);
        bo1[job] = evaluations_to_reach(bo, target1).value_or(budget + 1);
      } else {
        const std::size_t r = job - settings.seeds;
        Trace random = run_random(table, 1000 + r, space_size, target1);
        random5[r] = evaluations_to_reach(random, target5).value_or(space_size + 1);
        random1[r] = evaluations_to_reach(random, target1).value_or(space_size + 1);
      }
    }
  };
  std::vector<std::thread> threads;
  const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < workers; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();

  double b5, b1, r5, r1;
  std::string b5s = median(bo5, budget, &b5), b1s = median(bo1, budget, &b1);
  std::string r5s = median(random5, space_size, &r5), r1s = median(random1, space_size, &r1);
  const double exact5 = random_search_median(space_size, table.count_at_most(target5));
  const double exact1 = random_search_median(space_size, table.count_at_most(target1));
  std::string name = table.path().filename().string();
  std::printf(
      "%-20s %6.0f %6zu %8.4g | %5s %7s %6.0f %5s | %5s %7s %6.0f %5s | %6.3f\n", name.c_str(),
      points, table.failed_rows(), table.optimum(), b5s.c_str(), r5s.c_str(), exact5,
      ratio(exact5, b5, budget).c_str(), b1s.c_str(), r1s.c_str(), exact1,
      ratio(exact1, b1, budget).c_str(),
      bo_seconds.load() / static_cast<double>(std::max<std::size_t>(1, bo_evaluations.load())));
  if (settings.verbose) {
    std::printf("  BO seeds (5%%/1%%):");
    for (std::size_t k = 0; k < settings.seeds; ++k) std::printf(" %zu/%zu", bo5[k], bo1[k]);
    std::printf("\n");
  }
  std::fflush(stdout);
}

// Proposing 64 configurations after 1000 observations of a table's space (random ones).
void time_batch(const Table& table) {
  Options options;
  options.seed = 7;
  Optimizer optimizer(table.space(), options);
  std::mt19937_64 rng(11);
  std::unordered_set<r3::Hash128> seen;
  const std::size_t wanted =
      std::min<std::size_t>(1000, table.points() > 64 ? table.points() - 64 : 0);
  while (optimizer.observations().size() < wanted) {
    Configuration c = table.space().sample(rng);
    if (seen.insert(c.hash()).second) optimizer.observe(c, table.evaluate(c));
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<Configuration> batch = optimizer.propose(64);
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Optimizer::Timing& t = optimizer.last_timing();
  std::size_t failed = 0;
  for (const Observation& o : optimizer.observations()) failed += o.outcome.ok ? 0 : 1;
  std::printf(
      "%-20s %4zu observations (%3zu failed): batch of %zu in %.3f s (fit %.3f s, "
      "candidates %.3f s, selection %.3f s)\n",
      table.path().filename().c_str(), optimizer.observations().size(), failed, batch.size(), total,
      t.fit, t.candidates, t.select);
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings = parse(argc, argv);
  try {
    std::vector<Table> tables;
    for (const std::string& path : settings.tables) {
      std::vector<std::string> constraints = settings.constraints;
      const std::filesystem::path beside =
          std::filesystem::path(path).replace_extension(".constraints");
      if (std::filesystem::exists(beside))
        for (std::string& c : load_constraints(beside)) constraints.push_back(std::move(c));
      tables.push_back(Table::load_csv(path, constraints));
      if (!constraints.empty()) {
        std::printf("%s: known constraints", path.c_str());
        for (const std::string& c : constraints) std::printf(" '%s'", c.c_str());
        std::printf(": %zu configurations, %zu rows left out\n", tables.back().points(),
                    tables.back().excluded_rows());
      }
    }
    std::printf(
        "Bayesian optimisation (%s, %zu initial%s, trend %g, quadratic %g, batch %zu; %zu seeds, "
        "at most %zu "
        "evaluations)\n"
        "against random search (%zu seeds, until found); evaluations to get within 5%% and 1%%\n"
        "of the table's optimum, median over seeds. exact: the median of random search without\n"
        "replacement, computed from the table; ratio = exact / BO; s/eval: BO's time per "
        "evaluation\n\n",
        label_of(settings.acquisition), settings.initial,
        settings.defaults.centre_point ? " from the centre" : "", settings.defaults.trend,
        settings.defaults.quadratic_trend, settings.batch, settings.seeds, settings.budget,
        settings.random_seeds);
    std::printf("%-20s %6s %6s %8s | %5s %7s %6s %5s | %5s %7s %6s %5s | %6s\n", "", "", "", "", "",
                "within", "5%", "", "", "within", "1%", "", "");
    std::printf("%-20s %6s %6s %8s | %5s %7s %6s %5s | %5s %7s %6s %5s | %6s\n", "table", "points",
                "failed", "optimum", "BO", "random", "exact", "ratio", "BO", "random", "exact",
                "ratio", "s/eval");
    for (const Table& table : tables) simulate(table, settings);
    if (settings.timing) {
      std::printf("\nproposing a batch of 64 after 1000 observations (fewer in smaller spaces):\n");
      for (const Table& t : tables) time_batch(t);
    }
  } catch (const r3::Error& e) {
    std::fprintf(stderr, "bo_sim: %s\n", e.what());
    return 1;
  }
  return 0;
}
