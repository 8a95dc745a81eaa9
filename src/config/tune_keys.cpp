// Every key of tune.yaml, declared once (schema.hpp): the job's own sections and the mapping of
// the libraries' options. The parser, the resolved configuration and describe_keys() walk these
// declarations.
#include <algorithm>
#include <cctype>

#include "r3/error.hpp"
#include "schema.hpp"

namespace r3::config {
namespace {

namespace fs = std::filesystem;
using schema::Context;
using schema::Key;
using schema::Names;
using schema::Range;
using schema::Section;
using yaml::Document;
using yaml::Map;

const Names<Backend> kBackends{{{"auto", Backend::automatic},
                                {"host", Backend::host},
                                {"cuda", Backend::cuda},
                                {"simulate", Backend::simulate}}};
const Names<Compiler> kCompilers = Names<Compiler>::of(replay::kCompilerNames);
const Names<bo::Acquisition> kAcquisitions{
    {{"log_ei", bo::Acquisition::log_ei},
     {"ucb", bo::Acquisition::ucb},
     {"portfolio", bo::Acquisition::portfolio}}};
const Names<bo::BatchStrategy> kBatchStrategies{
    {{"kriging_believer", bo::BatchStrategy::kriging_believer}}};
const Names<bo::InitialDesign> kInitialDesigns{
    {{"sobol", bo::InitialDesign::sobol}, {"latin_hypercube", bo::InitialDesign::latin_hypercube}}};

constexpr std::int64_t kMany = std::int64_t{1} << 20;  // an upper bound no sane value reaches

template <class S>
using SectionPtr = std::shared_ptr<const Section<S>>;

template <class S>
SectionPtr<S> make(Section<S> section) {
  return std::make_shared<const Section<S>>(std::move(section));
}

bool is_identifier(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  return std::all_of(text.begin(), text.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

// A key whose reading and writing are its own.
template <class S>
Key<S> custom(std::string name, std::string type, std::string default_text, std::string doc,
              std::function<void(Map&, S&, const Context&)> read,
              std::function<void(YAML::Emitter&, const S&)> write) {
  Key<S> key{std::move(name), std::move(type), std::move(doc), std::move(read), std::move(write)};
  key.default_text = std::move(default_text);
  return key;
}

template <class S>
Key<S> share(double S::*member) {
  return schema::number("share", member, Range::closed(0, 1),
                        "Its share of the candidates among the enabled levels.");
}

// --- kernels ------------------------------------------------------------------------------

void read_launches(Map& map, KernelSelection& kernel, const Context&) {
  YAML::Node launches = map.get("launches");
  if (!launches.IsDefined() || (launches.IsScalar() && launches.Scalar() == "all")) return;
  const Document& doc = map.doc();
  yaml::for_each_item(
      doc, launches, map.key("launches"), [&](const YAML::Node& item, const std::string& item_key) {
        auto launch = static_cast<std::size_t>(yaml::decode_int(doc, item, item_key, 0, INT32_MAX));
        if (std::find(kernel.launches.begin(), kernel.launches.end(), launch) !=
            kernel.launches.end()) {
          doc.fail(item, item_key, "launch " + std::to_string(launch) + " is listed twice");
        }
        kernel.launches.push_back(launch);
      });
  if (kernel.launches.empty()) map.fail("launches", "list at least one launch, or write 'all'");
}

void read_defines(Map& map, KernelSelection& kernel, const Context&) {
  YAML::Node defines = map.get("defines");
  if (!defines.IsDefined()) return;
  Map define_map(map.doc(), defines, map.key("defines"));
  for (const auto& entry : defines) {
    std::string name = entry.first.Scalar();
    std::string define_key = define_map.key(name);
    if (!is_identifier(name)) map.doc().fail(entry.first, define_key, "not a valid macro name");
    kernel.defines[name] = yaml::decode_string(map.doc(), define_map.get(name), define_key);
  }
  define_map.finish();
}

void read_include_dirs(Map& map, KernelSelection& kernel, const Context& context) {
  YAML::Node dirs = map.get("include_dirs");
  if (!dirs.IsDefined()) return;
  yaml::for_each_item(map.doc(), dirs, map.key("include_dirs"),
                      [&](const YAML::Node& item, const std::string& item_key) {
                        std::string dir = yaml::decode_string(map.doc(), item, item_key);
                        if (dir.empty())
                          map.doc().fail(item, item_key, "an include directory must not be empty");
                        kernel.include_dirs.push_back(schema::resolve(context.base, dir));
                      });
}

void read_block(Map& map, KernelSelection& kernel, const Context&) {
  // [] (what the resolved configuration writes) means: as recorded.
  YAML::Node block = map.get("block");
  if (!block.IsDefined() || (block.IsSequence() && block.size() == 0)) return;
  std::vector<std::string> items;
  map.read("block", items);
  if (items.size() != 3)
    map.fail("block", "give the block shape as [x, y, z] (or [] for the recorded one)");
  const bool numbers = std::all_of(items.begin(), items.end(), [](const std::string& item) {
    return !item.empty() && item.find_first_not_of("0123456789") == std::string::npos;
  });
  if (numbers) {
    map.read("block", kernel.block, 1, 1u << 20);
    return;
  }
  // Sizes named after the source's tunables: checked when a source declares them.
  for (const std::string& item : items) {
    if (item.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_ "
                               "+-*/()") != std::string::npos)
      map.fail("block", "'" + item +
                            "' is neither a size nor an expression of R3_TUNABLE names "
                            "(integers, names, + - * / and parentheses)");
  }
  kernel.block_expressions = items;
}

// A section made once, for the keys that read and write it from their own lambdas.
template <class S, SectionPtr<S> (*Make)()>
SectionPtr<S> made_once() {
  static const SectionPtr<S> section = Make();
  return section;
}

SectionPtr<KernelSelection> make_kernel_section();
SectionPtr<KernelSelection> kernel_section() {
  return made_once<KernelSelection, make_kernel_section>();
}

SectionPtr<KernelSelection> make_kernel_section() {
  using K = KernelSelection;
  return make<K>({{
      schema::text<K>("name", &K::name, "string",
                      "The kernel in the capture: name, demangled name, Kokkos label or #N.")
          .defaults_to("required"),
      schema::path<K>("source", &K::source, "Its source file.").defaults_to("none"),
      schema::text<K>("entry", &K::entry, "string", "The function in `source` that is the kernel.")
          .defaults_to("the kernel's base name"),
      custom<K>("launches", "`all` or list of integers", "`all`",
                "Which recorded launches each candidate is verified and timed on.", read_launches,
                [](YAML::Emitter& out, const K& k) {
                  if (k.launches.empty())
                    out << "all";
                  else
                    schema::write_list(out, k.launches);
                }),
      custom<K>("defines", "mapping", "`{}`",
                "Macros defined for every compile and wherever the source is read (-D "
                "NAME=VALUE).",
                read_defines,
                [](YAML::Emitter& out, const K& k) {
                  out << YAML::Flow << YAML::BeginMap;
                  for (const auto& [name, value] : k.defines)
                    out << YAML::Key << name << YAML::Value << value;
                  out << YAML::EndMap;
                }),
      custom<K>("include_dirs", "list of paths", "`[]`",
                "Include directories for every compile and wherever the source is read (its "
                "quoted includes are read beside it).",
                read_include_dirs,
                [](YAML::Emitter& out, const K& k) {
                  std::vector<std::string> dirs;
                  for (const auto& dir : k.include_dirs) dirs.push_back(dir.string());
                  schema::write_list(out, dirs);
                }),
      schema::texts<K>("flags", &K::flags, "list of strings",
                       "Extra compiler flags for every compile; -std=, -D, -U and -I also "
                       "wherever the source is read."),
      schema::text<K>("passes", &K::passes, "string",
                      "LLVM pass pipeline for every compile the compiler level does not search."),
      custom<K>("block", "list of 3 integers or expressions", "`[]`",
                "Launch with this block shape instead of the recorded one.", read_block,
                [](YAML::Emitter& out, const K& k) {
                  if (k.block_expressions.empty())
                    schema::write_list(out, k.block);
                  else
                    schema::write_list(out, k.block_expressions);
                }),
      custom<K>(
          "grid", "`derive`, `recorded`", "`derive`",
          "With a new block: derive a grid that keeps the recorded threads, or keep the "
          "recorded grid.",
          [](Map& map, K& k, const Context&) {
            if (YAML::Node node = map.get("grid"); node.IsDefined())
              k.keep_grid = yaml::decode_choice(map.doc(), node, map.key("grid"),
                                                {"derive", "recorded"}) == "recorded";
          },
          [](YAML::Emitter& out, const K& k) { out << (k.keep_grid ? "recorded" : "derive"); }),
  }});
}

KernelSelection read_kernel(const Document& doc, const YAML::Node& node, const std::string& key,
                            const Context& context) {
  KernelSelection kernel;
  if (node.IsScalar()) {  // "- stencil2d" is short for "- name: stencil2d"
    kernel.name = node.Scalar();
    if (kernel.name.empty()) doc.fail(node, key, "a kernel name must not be empty");
    return kernel;
  }
  Map map(doc, node, key);
  if (!map.has("name")) map.fail("name", "every kernel needs a name (as in the capture)");
  schema::read(*kernel_section(), map, kernel, context);
  if (kernel.name.empty()) map.fail("name", "must not be empty");
  return kernel;
}

Key<TuneConfig> kernels_key() {
  using T = TuneConfig;
  Key<T> key = custom<T>(
      "kernels", "list", "required",
      "The kernels to tune, at least one: a name, or a mapping with the keys below.",
      [](Map& map, T& config, const Context& context) {
        YAML::Node kernels = map.get("kernels");
        if (!kernels.IsDefined()) map.fail("kernels", "missing: list the kernels to tune");
        yaml::for_each_item(
            map.doc(), kernels, "kernels",
            [&](const YAML::Node& item, const std::string& item_key) {
              config.kernels.push_back(read_kernel(map.doc(), item, item_key, context));
            });
        if (config.kernels.empty()) map.fail("kernels", "must list at least one kernel");
      },
      [](YAML::Emitter& out, const T& config) {
        out << YAML::BeginSeq;
        for (const KernelSelection& kernel : config.kernels)
          schema::write(*kernel_section(), out, kernel);
        out << YAML::EndSeq;
      });
  key.describe_children = [](const std::string& prefix, std::vector<KeyDescription>& rows) {
    schema::describe(*kernel_section(), prefix, rows);
  };
  return key;
}

// --- search -------------------------------------------------------------------------------

SectionPtr<PassSearch> pass_section() {
  using P = PassSearch;
  return make<P>(
      {{
           schema::texts<P>("pool", &P::pool, "list of pass names",
                            "LLVM passes that pass sequences are built from.")
               .defaults_to("16 common passes"),
           schema::integer<P>("max_length", &P::max_length, 1, 64, "Longest pass sequence."),
           schema::flag<P>("repeat", &P::repeat,
                           "Whether a pass may appear more than once in a sequence."),
           schema::text<P>("baseline", &P::baseline, "pipeline",
                           "The pipeline candidates are compared with."),
       },
       [](Map& map, P& passes, const Context&) {
         if (passes.pool.empty()) map.fail("pool", "must list at least one pass");
       }});
}

SectionPtr<SourceLevel> source_section() {
  using L = SourceLevel;
  return make<L>({{
      schema::flag<L>("enabled", &L::enabled, "Rewrite the kernel source."),
      share<L>(&L::share),
      schema::subset<L>("mutators", &L::mutators, evolve::kMutatorNames,
                        "Built-in mutators used without an LLM endpoint.")
          .defaults_to("all six"),
  }});
}

SectionPtr<CompilerLevel> compiler_section() {
  using L = CompilerLevel;
  return make<L>({{
      schema::flag<L>("enabled", &L::enabled,
                      "Tune the compiler, its flags and the LLVM pass pipeline."),
      share<L>(&L::share),
      custom<L>(
          "compilers", "list of " + schema::choice_type(kCompilers.names()), "",
          "Compilers accepted (the path follows from the kernel).",
          [](Map& map, L& level, const Context&) {
            if (!map.has("compilers")) {
              map.get("compilers");
              return;
            }
            std::vector<std::string> names;
            map.read_choices("compilers", names, kCompilers.names());
            if (names.empty()) map.fail("compilers", "must list at least one compiler");
            level.compilers.clear();
            for (const std::string& name : names) level.compilers.push_back(kCompilers.value(name));
          },
          [](YAML::Emitter& out, const L& level) {
            std::vector<std::string> names;
            for (Compiler c : level.compilers) names.push_back(kCompilers.name(c));
            schema::write_list(out, names);
          }),
      schema::subset<L>("flags", &L::flags, kKnownCompilerFlags,
                        "Compiler switches the search may set.")
          .defaults_to("all six"),
      schema::integers<L, int>("opt_levels", &L::opt_levels, 0, 3, "Optimisation levels to try."),
      schema::integers<L, int>("max_registers", &L::max_registers, 0, 255,
                               "Register limits per thread to try; 0 is no limit."),
      schema::section<L, PassSearch>("passes", &L::passes, pass_section()),
  }});
}

SectionPtr<LaunchLevel> launch_section() {
  using L = LaunchLevel;
  const std::uint32_t most = 1u << 20;
  return make<L>(
      {{
           schema::flag<L>("enabled", &L::enabled, "Tune the block shape."),
           share<L>(&L::share),
           schema::integers<L, std::uint32_t>("block_x", &L::block_x, 1, most,
                                              "Block sizes to try in x."),
           schema::integers<L, std::uint32_t>("block_y", &L::block_y, 1, most,
                                              "Block sizes to try in y."),
           schema::integers<L, std::uint32_t>("block_z", &L::block_z, 1, most,
                                              "Block sizes to try in z."),
           schema::integer<L>("max_threads", &L::max_threads, 1, most, "Largest bx*by*bz."),
           schema::text<L>("grid", &L::grid, "`derive` or expression",
                           "How the grid follows the block."),
       },
       [](Map& map, L& level, const Context&) {
         if (level.grid.empty()) map.fail("grid", "must be 'derive' or an expression");
         std::uint64_t smallest =
             std::uint64_t{*std::min_element(level.block_x.begin(), level.block_x.end())} *
             *std::min_element(level.block_y.begin(), level.block_y.end()) *
             *std::min_element(level.block_z.begin(), level.block_z.end());
         if (smallest > level.max_threads) {
           map.fail("max_threads", "no block shape fits: the smallest has " +
                                       std::to_string(smallest) +
                                       " threads, more than max_threads");
         }
       }});
}

SectionPtr<ParameterLevel> parameter_section() {
  using L = ParameterLevel;
  return make<L>({{
      schema::flag<L>("enabled", &L::enabled, "Tune the values of the source's R3_TUNABLEs."),
      share<L>(&L::share),
  }});
}

SectionPtr<evolve::ArchiveOptions> archive_section() {
  using A = evolve::ArchiveOptions;
  return make<A>({{
      schema::integer<A>("islands", &A::islands, 1, 1024, "Islands of the MAP-Elites archive."),
      schema::integer<A>("migration_interval", &A::migration_interval, 1, kMany,
                         "Generations between migrations."),
      schema::subset<A>("descriptors", &A::descriptors, evolve::kArchiveDescriptors,
                        "Behaviour descriptors of the archive."),
      schema::integer<A>("bins", &A::bins, 1, 64, "Bins per descriptor."),
      schema::number<A>("exploration", &A::exploration, Range::closed(0, 1),
                        "Share of parents drawn outside the elites."),
      schema::number<A>("similarity_threshold", &A::similarity_threshold, Range::left_open(0, 1),
                        "Sources more similar than this to one evaluated are dropped."),
  }});
}

SectionPtr<bo::Options> bo_section() {
  using B = bo::Options;
  return make<B>({{
      schema::choice<B>("initial_design", &B::initial_design, kInitialDesigns,
                        "How the first configurations of a source are chosen."),
      schema::integer<B>("initial_samples", &B::initial_samples, 1, 1 << 16,
                         "How many, the defaults included."),
      schema::choice<B>("acquisition", &B::acquisition, kAcquisitions, "Acquisition function."),
      schema::number<B>("ucb_beta", &B::ucb_beta, Range::positive(), "Exploration weight of UCB."),
      schema::number<B>("handover_improvement", &B::handover_improvement, Range::closed(0, 10),
                        "Portfolio: where the best expected improvement is below this (in the "
                        "surrogate's target standard deviations), log-EI's turn goes to UCB with "
                        "handover_ucb_beta; 0: off."),
      schema::number<B>("handover_ucb_beta", &B::handover_ucb_beta, Range::positive(),
                        "Exploration weight of UCB when it takes log-EI's turn."),
      schema::integer<B>("handover_stall", &B::handover_stall, 0, 1 << 16,
                         "Observations without a new best after which log-EI keeps its turns "
                         "(its far picks leave a local optimum)."),
      schema::integer<B>("refine_stall", &B::refine_stall, 0, 1 << 16,
                         "Observations without a new best after which UCB's picks try the best "
                         "configuration's one-parameter changes, until as many as there are "
                         "parameters were tried; 0: off."),
      schema::number<B>("plateau_bisection", &B::plateau_bisection, Range::closed(0, 1),
                        "Where the latest step (a new best, or a later point) was within this "
                        "fraction of the best's time, the next pick goes half the way on from the "
                        "best to the end of the step's range (or to the nearest value measured on "
                        "that line), else back past its other end; 0: off."),
      schema::number<B>("pair_completion", &B::pair_completion, Range::closed(0, 10),
                        "Once refine_stall observations have passed without a new best, the "
                        "first pick makes two one-parameter changes of the best at once, each "
                        "measured within this fraction of its time (the one UCB ranks first), "
                        "until as many as there are parameters were tried; 0: off."),
      schema::flag<B>("exploit_predicted_improvement", &B::exploit_predicted_improvement,
                      "Where the surrogate predicts an unmeasured configuration faster than the "
                      "best measured one, log-EI's turn measures the fastest such prediction."),
      schema::number<B>("exploit_successes_per_parameter", &B::exploit_successes_per_parameter,
                        Range::closed(0, 100),
                        "exploit_predicted_improvement only once the surrogate has this many "
                        "successes per parameter of the space; 0: from the first model."),
      schema::number<B>("trend", &B::trend, Range::closed(0, 10),
                        "Prior variance of the surrogate's linear trend per numeric parameter; 0: "
                        "none."),
      schema::number<B>("quadratic_trend", &B::quadratic_trend, Range::closed(0, 10),
                        "Centre of the prior on the weight of the trend's quadratic term (every "
                        "product and square of the numeric parameters' positions); 0, or trend "
                        "0: none."),
      schema::number<B>("known_correlation", &B::known_correlation, Range::closed(0, 1),
                        "Kernel correlation with a measured (or pending) configuration at or above "
                        "which a candidate counts as known and is proposed after the others; 0: "
                        "off."),
      schema::flag<B>("constraint_quantities", &B::constraint_quantities,
                      "The surrogate also takes the quantities the constraints bound (bx*by of "
                      "bx*by<=1024) as inputs."),
      schema::number<B>("lengthscale_centre", &B::lengthscale_centre, Range::closed(0, 20),
                        "Centre of the prior on the surrogate's lengthscales (positions in [0, "
                        "1]); 0: sqrt(d) for d numeric inputs."),
      schema::number<B>("inert_tolerance", &B::inert_tolerance, Range::closed(0, 1),
                        "Relative change of time within which a parameter's every change alone "
                        "among the best quarter of the measured configurations counts as none: "
                        "the surrogate then treats it as irrelevant where its fit loses little; "
                        "0: off."),
      schema::integer<B>("hyperparameter_draws", &B::hyperparameter_draws, 0, 256,
                         "While the surrogate has at most hyperparameter_draws_until times, the "
                         "acquisition is averaged over this many draws of its lengthscales' "
                         "posterior; 0: the fitted ones alone."),
      schema::integer<B>("hyperparameter_draws_until", &B::hyperparameter_draws_until, 0, 128,
                         "Successful configurations of a source and level until which the "
                         "acquisition is averaged over hyperparameter_draws (each draw's model "
                         "is made whole at each proposal)."),
      schema::flag<B>("draws_for_log_ei", &B::draws_for_log_ei,
                      "log-EI's turns average over the hyperparameter draws too (by default only "
                      "UCB's do; log-EI's take the fitted model alone)."),
      schema::number<B>("min_feasibility", &B::min_feasibility, Range::closed(0, 0.5),
                        "P(feasible) below which a configuration the failure model is sure of is "
                        "not proposed; 0: propose every one."),
      schema::number<B>("pending_per_observation", &B::pending_per_observation,
                        Range::closed(0, 64),
                        "Configurations of one source and level in flight per one observed (at "
                        "least 4 or initial_samples) before other work gets the batch; 0: no "
                        "limit."),
      schema::flag<B>("cost_aware", &B::cost_aware,
                      "Weigh failures by what they cost against successes (their mean "
                      "evaluation times): acquisition per expected cost, and a higher bar for "
                      "points sure to fail."),
      schema::integer<B>("max_costly_failures", &B::max_costly_failures, 0, 1 << 16,
                         "Failures since the last success costing over 20 times a success (a lost "
                         "GPU context) after which a source's level proposes nothing more; 0: no "
                         "limit."),
      schema::integer<B>("fit_lag", &B::fit_lag, 0, 1 << 16,
                         "Observations the hyperparameters lag the history by, so that their fit "
                         "runs while candidates are evaluated; 0: none."),
      schema::choice<B>("batch", &B::batch, kBatchStrategies,
                        "How a batch of proposals for many evaluators is formed."),
  }});
}

SectionPtr<SearchConfig> search_section() {
  using S = SearchConfig;
  auto levels = make<S>({{
      schema::section<S, SourceLevel>("source", &S::source, source_section()),
      schema::section<S, CompilerLevel>("compiler", &S::compiler, compiler_section()),
      schema::section<S, LaunchLevel>("launch", &S::launch, launch_section()),
      schema::section<S, ParameterLevel>("parameters", &S::parameters, parameter_section()),
  }});
  return make<S>(
      {{
           schema::integer<S>("seed", &S::seed, 0, INT64_MAX, "Seed of every random choice."),
           schema::integer<S>("batch_size", &S::batch_size, 0, kMany,
                              "Candidates per generation; 0: eight per evaluator, at most 256 (but at least two per evaluator)."),
           schema::group<S>("levels", levels),
           schema::section<S, evolve::ArchiveOptions>("archive", &S::archive, archive_section()),
           schema::section<S, bo::Options>("bo", &S::bo, bo_section()),
       },
       [](Map& map, S& search, const Context&) {
         double total = 0;
         if (search.source.enabled) total += search.source.share;
         if (search.compiler.enabled) total += search.compiler.share;
         if (search.launch.enabled) total += search.launch.share;
         if (search.parameters.enabled) total += search.parameters.share;
         if (total <= 0) {
           map.fail("levels",
                    "no search level is enabled with a share above 0: nothing to "
                    "search");
         }
       }});
}

// --- budget, simulate, llm ----------------------------------------------------------------

SectionPtr<BudgetConfig> budget_section() {
  using B = BudgetConfig;
  return make<B>({{
      schema::integer<B>("evaluations", &B::evaluations, 1, INT64_MAX, "Candidates evaluated."),
      schema::integer<B>("generations", &B::generations, 1, UINT32_MAX, "Generations."),
      schema::duration<B>("wall_time", &B::wall_time_s, Range::positive(),
                          "Wall time of the whole run."),
      schema::number<B>("llm_cost", &B::llm_cost, Range::non_negative(),
                        "LLM spending limit; 0 is no limit."),
      schema::duration<B>("job_end_margin", &B::job_end_margin_s, Range::any(),
                          "Stop this long before the batch job's end time."),
  }});
}

SectionPtr<replay::SimulationOptions> simulation_section() {
  using S = replay::SimulationOptions;
  return make<S>({{
      schema::duration<S>("compile", &S::compile_s, Range::any(), "Mean compile time."),
      schema::duration<S>("run", &S::run_s, Range::any(), "Mean time of a candidate's runs."),
      schema::number<S>("spread", &S::spread, Range::closed(0, 1),
                        "Each time is its mean x (1 +- spread)."),
      schema::number<S>("failure_rate", &S::failure_rate, Range::closed(0, 1),
                        "Candidates that fail."),
      schema::duration<S>("kernel_time", &S::kernel_s, Range::positive(),
                          "The recorded kernel's time."),
      schema::number<S>("lost_rate", &S::lost_rate, Range::closed(0, 1),
                        "Candidates that lose their GPU context."),
      schema::duration<S>("lost_time", &S::lost_s, Range::any(),
                          "What a candidate that loses its context costs."),
      schema::duration<S>("prepare", &S::prepare_s, Range::any(),
                          "A sandbox child's start (the capture prepared), before its first "
                          "candidate."),
  }});
}

bool looks_like_url(std::string_view text) {
  return text.rfind("http://", 0) == 0 || text.rfind("https://", 0) == 0;
}

SectionPtr<evolve::LlmOptions> llm_section() {
  using L = evolve::LlmOptions;
  return make<L>(
      {{
           schema::text<L>("endpoint", &L::endpoint, "URL",
                           "Base URL of an OpenAI-compatible server (.../v1)."),
           schema::text<L>("model", &L::model, "string", "Model name; required with an endpoint."),
           // The key itself must never appear in tune.yaml (nor, therefore, in the run
           // database): only the name of the variable that holds it. Its value is not echoed.
           custom<L>(
               "api_key_env", "variable name", "",
               "The environment variable holding the API key (empty: none).",
               [](Map& map, L& llm, const Context&) {
                 YAML::Node node = map.get("api_key_env");
                 if (!node.IsDefined()) return;
                 std::string name = yaml::decode_string(map.doc(), node, map.key("api_key_env"));
                 if (!name.empty() && !is_identifier(name)) {
                   map.fail("api_key_env",
                            "must be the NAME of an environment variable that holds the "
                            "key (letters, digits, '_'), not the key itself; remove the "
                            "key from this file");
                 }
                 llm.api_key_env = name;
               },
               [](YAML::Emitter& out, const L& llm) { out << llm.api_key_env; }),
           schema::number<L>("temperature", &L::temperature, Range::closed(0, 2),
                             "Sampling temperature."),
           schema::integer<L>("max_tokens", &L::max_tokens, 1, 1 << 24, "Longest answer."),
           schema::integer<L>("max_answer_bytes", &L::max_answer_bytes, 1024, 1 << 30,
                              "Largest HTTP answer accepted."),
           schema::duration<L>("timeout", &L::timeout_s, Range::positive(),
                               "Time limit of one request."),
           schema::integer<L>("concurrency", &L::concurrency, 1, 1024,
                              "Requests in flight at once."),
           schema::integer<L>("max_retries", &L::max_retries, 0, 100,
                              "Retries after 429, 5xx and timeouts."),
           schema::number<L>("prompt_cost_per_mtok", &L::prompt_cost_per_mtok,
                             Range::non_negative(), "Price of a million prompt tokens."),
           schema::number<L>("completion_cost_per_mtok", &L::completion_cost_per_mtok,
                             Range::non_negative(), "Price of a million completion tokens."),
           schema::path<L>("templates", &L::templates,
                           "Prompt templates that replace the built-in ones.")
               .defaults_to("none"),
           schema::path<L>("ca_bundle", &L::ca_bundle,
                           "PEM certificates that verify the endpoint's TLS certificate.")
               .defaults_to("the system's"),
       },
       [](Map& map, L& llm, const Context&) {
         if (!llm.endpoint.empty() && !looks_like_url(llm.endpoint)) {
           map.fail("endpoint",
                    "must be an http:// or https:// URL, e.g. http://127.0.0.1:8000/v1");
         }
         if (!llm.endpoint.empty() && llm.model.empty())
           map.fail("model", "an endpoint needs a model name");
         if (std::error_code ec; !llm.ca_bundle.empty() && !fs::is_regular_file(llm.ca_bundle, ec))
           map.fail("ca_bundle", "no such file: " + llm.ca_bundle.string());
       }});
}

// --- verify, timing, output ---------------------------------------------------------------

using replay::Tolerance;

Tolerance read_tolerance(const Document& doc, const YAML::Node& node, const std::string& key) {
  if (node.IsScalar()) {
    if (node.Scalar() == "bitwise" || node.Scalar() == "exact") return Tolerance::exact();
    doc.fail(node, key, "expected 'bitwise' or {rtol: R, atol: A}, got '" + node.Scalar() + "'");
  }
  Map map(doc, node, key);
  Tolerance tolerance = Tolerance::relative(0, 0);
  map.read("rtol", tolerance.rtol);
  map.read("atol", tolerance.atol);
  if (tolerance.rtol < 0) map.fail("rtol", "must not be negative");
  if (tolerance.atol < 0) map.fail("atol", "must not be negative");
  if (!map.has("rtol") && !map.has("atol")) map.fail("rtol", "give rtol, atol or both");
  map.finish();
  return tolerance;
}

void write_tolerance(YAML::Emitter& out, const Tolerance& t) {
  if (t.bitwise) {
    out << "bitwise";
    return;
  }
  out << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "rtol" << YAML::Value << t.rtol;
  out << YAML::Key << "atol" << YAML::Value << t.atol;
  out << YAML::EndMap;
}

void read_type_tolerances(Map& map, replay::VerifyOptions& verify, const Context&) {
  YAML::Node types = map.get("types");
  if (!types.IsDefined()) return;
  Map type_map(map.doc(), types, map.key("types"));
  for (const auto& entry : types) {
    std::string name = entry.first.Scalar();
    auto type = capture::parse_element_type(name);
    if (!type || *type == capture::ElementType::unknown) {
      std::vector<std::string> names;
      for (auto t : capture::kAllElementTypes) {
        if (t != capture::ElementType::unknown) names.emplace_back(capture::to_string(t));
      }
      yaml::decode_choice(map.doc(), entry.first, type_map.key(name), names);
    }
    Tolerance tolerance = read_tolerance(map.doc(), type_map.get(name), type_map.key(name));
    if (!tolerance.bitwise && !capture::is_floating_point(*type)) {
      map.doc().fail(entry.first, type_map.key(name),
                     "integer types are compared bitwise; a tolerance applies to f16, bf16, f32 "
                     "and f64 only");
    }
    verify.types[*type] = tolerance;
  }
  type_map.finish();
}

SectionPtr<replay::VerifyOptions> verify_section() {
  using V = replay::VerifyOptions;
  return make<V>({{
      custom<V>("types", "mapping type → tolerance",
                "`f16: {rtol: 1e-3, atol: 1e-5}`, `bf16: {rtol: 1e-2, atol: 1e-4}`, `f32: {rtol: "
                "1e-5, atol: 1e-8}`, `f64: {rtol: 1e-12, atol: 1e-15}`; integers bitwise",
                "Tolerance per element type.", read_type_tolerances,
                [](YAML::Emitter& out, const V& verify) {
                  out << YAML::BeginMap;
                  for (const auto& [type, t] : verify.types) {
                    if (type == capture::ElementType::unknown) continue;
                    out << YAML::Key << std::string(capture::to_string(type)) << YAML::Value;
                    write_tolerance(out, t);
                  }
                  out << YAML::EndMap;
                }),
      custom<V>(
          "regions", "mapping name → tolerance", "`{}`",
          "Tolerance per region name; wins over types.",
          [](Map& map, V& verify, const Context&) {
            YAML::Node regions = map.get("regions");
            if (!regions.IsDefined()) return;
            Map region_map(map.doc(), regions, map.key("regions"));
            for (const auto& entry : regions) {
              std::string name = entry.first.Scalar();
              verify.regions[name] =
                  read_tolerance(map.doc(), region_map.get(name), region_map.key(name));
            }
            region_map.finish();
          },
          [](YAML::Emitter& out, const V& verify) {
            if (verify.regions.empty()) out << YAML::Flow;
            out << YAML::BeginMap;
            for (const auto& [name, t] : verify.regions) {
              out << YAML::Key << name << YAML::Value;
              write_tolerance(out, t);
            }
            out << YAML::EndMap;
          }),
      schema::flag<V>("after_timing", &V::after_timing, "Verify again after the timed runs."),
  }});
}

SectionPtr<TimingConfig> timing_section() {
  using T = TimingConfig;
  Key<T> compile_threads = custom<T>(
      "compile_threads", "integer 0..256", "automatic",
      "Threads per evaluator that compile its next candidates while one runs.",
      [](Map& map, T& timing, const Context&) {
        if (!map.has("compile_threads")) {
          map.get("compile_threads");
          return;
        }
        std::uint32_t threads = 0;
        map.read("compile_threads", threads, 0, 256);
        timing.compile_threads = threads;
      },
      [](YAML::Emitter& out, const T& timing) { out << timing.compile_threads.value_or(0); });
  compile_threads.written = [](const T& timing) { return timing.compile_threads.has_value(); };
  return make<T>({{
      schema::integer<T>("warmup", &T::warmup, 0, kMany, "Untimed runs before timing."),
      schema::integer<T>("repeats", &T::repeats, 1, kMany, "Timed runs per launch."),
      schema::flag<T>("flush_l2", &T::flush_l2, "Evict the L2 cache before every timed run."),
      schema::duration<T>("candidate_timeout", &T::candidate_timeout_s, Range::positive(),
                          "A candidate that runs longer is stopped as a timeout."),
      std::move(compile_threads),
      schema::flag<T>("standby_sandbox", &T::standby_sandbox,
                      "GPU backends: once a candidate lost its GPU context, keep a second "
                      "sandbox child prepared to take over from the next one that does (it "
                      "prepares on the GPU beside candidates being timed)."),
      schema::integer<T>("confirm_top", &T::confirm_top, 0, 1 << 16,
                         "Best candidates re-measured before one is declared best."),
      schema::integer<T>("confirm_repeats", &T::confirm_repeats, 1, kMany,
                         "Timed runs per launch when confirming."),
      schema::integer<T>("confirm_rounds", &T::confirm_rounds, 1, 1000,
                         "Interleaved rounds of the confirmation on each evaluator."),
  }});
}

SectionPtr<OutputConfig> make_output_section();
SectionPtr<OutputConfig> output_section() { return made_once<OutputConfig, make_output_section>(); }

SectionPtr<OutputConfig> make_output_section() {
  using O = OutputConfig;
  return make<O>(
      {{
           schema::path<O>("directory", &O::directory, "Where the results go.")
               .defaults_to("`r3-results`"),
           // Relative to the directory, not to tune.yaml: read by the section's check.
           custom<O>(
               "run_database", "path", "`run.h5`",
               "The run database, relative to output.directory.",
               [](Map& map, O&, const Context&) { map.get("run_database"); },
               [](YAML::Emitter& out, const O& output) { out << output.run_database.string(); }),
       },
       [](Map& map, O& output, const Context& context) {
         if (output.directory.empty()) output.directory = context.base / "r3-results";
         schema::read_path(map, "run_database", output.run_database, output.directory);
         if (output.run_database.empty()) output.run_database = output.directory / "run.h5";
       }});
}

// --- the document -------------------------------------------------------------------------

SectionPtr<TuneConfig> document_section() {
  using T = TuneConfig;
  Key<T> simulate =
      schema::section<T, replay::SimulationOptions>("simulate", &T::simulate, simulation_section());
  simulate.written = [](const T& config) { return config.backend == Backend::simulate; };
  // Read even when absent: the output paths' defaults depend on where tune.yaml is.
  Key<T> output = schema::section<T, OutputConfig>("output", &T::output, output_section());
  output.read = [](Map& map, T& config, const Context& context) {
    YAML::Node node = map.get("output");
    Map output_map(map.doc(), node.IsDefined() ? node : YAML::Node(YAML::NodeType::Map),
                   map.key("output"));
    schema::read(*output_section(), output_map, config.output, context);
  };
  return make<T>(
      {{
           custom<T>(
               "capture", "path", "required",
               "The capture file the candidates are replayed against.",
               [](Map& map, T& config, const Context& context) {
                 if (!map.has("capture"))
                   map.fail("capture", "missing: the capture file to tune against");
                 schema::read_path(map, "capture", config.capture, context.base);
                 if (config.capture.empty()) map.fail("capture", "must name the capture file");
               },
               [](YAML::Emitter& out, const T& config) { out << config.capture.string(); }),
           schema::choice<T>("backend", &T::backend, kBackends, "Replay backend."),
           kernels_key(),
           schema::section<T, SearchConfig>("search", &T::search, search_section()),
           schema::section<T, BudgetConfig>("budget", &T::budget, budget_section()),
           std::move(simulate),
           schema::section<T, evolve::LlmOptions>("llm", &T::llm, llm_section()),
           schema::section<T, replay::VerifyOptions>("verify", &T::verify, verify_section()),
           schema::section<T, TimingConfig>("timing", &T::timing, timing_section()),
           std::move(output),
       },
       [](Map& map, T& config, const Context&) {
         if (map.has("simulate") && config.backend != Backend::simulate)
           map.fail("simulate",
                    "cannot take effect: it sets the simulate backend's costs, and backend is '" +
                        kBackends.name(config.backend) + "'");
       }});
}

const Section<TuneConfig>& document() {
  static const SectionPtr<TuneConfig> section = document_section();
  return *section;
}

}  // namespace

std::string_view to_string(Backend value) { return kBackends.name(value); }

void read_document(const YAML::Node& root, TuneConfig& config) {
  Document doc(config.file.string(), &config.locations);
  if (!root.IsDefined() || root.IsNull()) {
    doc.fail(YAML::Mark::null_mark(), "",
             "the file is empty; it needs at least 'capture' and 'kernels'");
  }
  Map map(doc, root, "");
  schema::read(document(), map, config, Context{config.file.parent_path()});
}

std::string to_yaml(const TuneConfig& config) {
  YAML::Emitter out;
  // 15 significant digits reproduce every decimal a user can write, without binary noise.
  out.SetDoublePrecision(15);
  schema::write(document(), out, config);
  return std::string(out.c_str()) + "\n";
}

std::vector<KeyDescription> describe_keys() {
  std::vector<KeyDescription> rows;
  schema::describe(document(), "", rows);
  return rows;
}

}  // namespace r3::config
