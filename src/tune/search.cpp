#include "search.hpp"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "clock.hpp"
#include "r3/cores.hpp"
#include "r3/error.hpp"
#include "r3/evolve/mutators.hpp"
#include "r3/log.hpp"
#include "r3/replay/wire.hpp"

namespace r3::tune {
namespace {

using nlohmann::json;
constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr std::size_t kRecentFailures = 4;
// Threads that fit hyperparameters ahead at most (fewer where rank 0 has fewer spare cores): a
// generation touches a few optimizers, each fitting a GP and a classifier.
constexpr std::size_t kFitThreads = 4;
constexpr std::size_t kMutatorThreads = 4;

std::string first_lines(const std::string& text, std::size_t limit = 400) {
  return text.size() <= limit ? text : text.substr(0, limit) + " ...";
}

}  // namespace

std::optional<evolve::BlockExpressions> coupled_block(
    const std::string& text, const std::vector<evolve::Tunable>& tunables,
    const std::optional<evolve::BlockExpressions>& configured) {
  if (auto declared = evolve::parse_launch_block(text)) return declared;
  if (!configured) return std::nullopt;
  // tune.yaml's block holds for the sources that declare every name it uses.
  for (const std::string& e : *configured)
    for (const std::string& name : evolve::names_in(e))
      if (std::none_of(tunables.begin(), tunables.end(),
                       [&](const evolve::Tunable& t) { return t.name == name; }))
        return std::nullopt;
  return configured;
}

std::optional<capture::Dim3> block_of(const evolve::BlockExpressions& block,
                                      const std::vector<evolve::Tunable>& tunables,
                                      const std::map<std::string, std::string>& defines) {
  std::map<std::string, std::string> values;
  for (const evolve::Tunable& t : tunables) values[t.name] = t.default_value;
  for (const auto& [name, value] : defines) values[name] = value;
  std::array<std::uint32_t, 3> dims{};
  for (int d = 0; d < 3; ++d) {
    std::optional<std::int64_t> v = evolve::evaluate_size(block[d], values);
    if (!v || *v < 1 || *v > (1 << 20)) return std::nullopt;
    dims[d] = static_cast<std::uint32_t>(*v);
  }
  return capture::Dim3{dims[0], dims[1], dims[2]};
}

std::string entry_in_source(const KernelTarget& target) {
  if (!target.base.entry.empty()) return target.base.entry;
  return target.source_entry.empty() ? target.name : target.source_entry;
}

std::vector<std::string> reading_flags(const std::vector<std::string>& flags) {
  std::vector<std::string> reading;
  for (const std::string& flag : flags)
    if (flag.rfind("-std=", 0) == 0 || flag.rfind("-D", 0) == 0 || flag.rfind("-I", 0) == 0 ||
        flag.rfind("-U", 0) == 0)
      reading.push_back(flag);
  return reading;
}

replay::RunOptions Search::run_options(std::size_t kernel) const {
  replay::RunOptions options;
  options.warmup = config_.timing.warmup;
  options.repeats = config_.timing.repeats;
  options.verify_after_timing = config_.verify.after_timing;
  options.flush_l2 = config_.timing.flush_l2;
  options.verify = config_.verify;
  options.verify.region_types = kernels_.at(kernel).region_types;
  return options;
}

std::vector<std::size_t> fair_shares(std::size_t count, const std::vector<double>& weights,
                                     std::vector<double>& received) {
  std::vector<std::size_t> out(weights.size(), 0);
  received.resize(weights.size(), 0);
  double sum = 0;
  for (double w : weights) sum += std::max(0.0, w);
  if (sum <= 0) return out;
  double total = 0;
  for (double r : received) total += r;
  for (std::size_t n = 0; n < count; ++n) {
    total += 1;
    std::size_t best = weights.size();
    double best_deficit = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (weights[i] <= 0) continue;
      const double deficit = total * weights[i] / sum - received[i];
      if (best == weights.size() || deficit > best_deficit + 1e-9) {
        best = i;
        best_deficit = deficit;
      }
    }
    ++out[best];
    received[best] += 1;
  }
  return out;
}

struct Search::SourceEntry {
  Hash128 hash;
  std::string text;
  std::int64_t parent = -1;     // the candidate it was derived from
  std::int64_t candidate = -1;  // the candidate that first evaluated it
  std::size_t island = 0;
  std::vector<evolve::Tunable> tunables;
  // The block as expressions of the tunables, where the source's sizes fix its launch shape
  // (R3_LAUNCH_BLOCK, or tune.yaml's block naming its tunables): the launch level leaves it.
  std::optional<evolve::BlockExpressions> block;
  bool keep_grid = false;  // R3_LAUNCH_GRID(recorded): the block changes, the grid does not
  std::map<Level, LevelSpace> spaces;
  std::map<Level, std::unique_ptr<bo::Optimizer>> optimizers;
  std::map<Level, bo::Configuration> best;  // per level, in the fastest candidate of this source
  double best_time = kInfinity;
  std::string best_description;
  evolve::KernelResources resources;
};

struct Search::KernelState {
  std::size_t index = 0;
  std::vector<std::unique_ptr<SourceEntry>> sources;  // in creation order
  std::map<Hash128, SourceEntry*> by_hash;
  evolve::Archive archive;
  evolve::NoveltyFilter novelty;
  std::map<Hash128, std::vector<evolve::Mutation>> mutations;  // per parent, made once
  std::set<Hash128> mutated_ahead;  // parents the mutation worker was asked for ahead
  std::deque<std::pair<std::string, Hash128>> llm_sources;     // answers waiting: text, parent
  std::deque<std::string> recent_failures;
  std::vector<double> received;  // candidates each slot (source, then kLevels) got so far
  explicit KernelState(const config::TuneConfig& c)
      : archive(c.search.archive), novelty(c.search.archive.similarity_threshold) {}
};

Search::Search(const config::TuneConfig& config, config::Backend backend,
               const capture::CaptureReader& capture, std::vector<KernelTarget> kernels)
    : config_(config),
      backend_(backend),
      levels_(config, backend),
      kernels_(std::move(kernels)),
      rng_(config.search.seed),
      prompt_rng_(config.search.seed ^ 0x9e3779b97f4a7c15ULL),
      device_(capture.info().device) {
  for (std::size_t k = 0; k < kernels_.size(); ++k) {
    auto state = std::make_unique<KernelState>(config_);
    state->index = k;
    SourceEntry& original = add_source(*state, kernels_[k].source, -1, 0);
    mutate_ahead(*state, original);
    states_.push_back(std::move(state));
  }
  if (config_.llm.enabled())
    prompts_ = std::make_unique<evolve::PromptBuilder>(config_.llm.templates);
}

Search::~Search() = default;

Search::SourceEntry& Search::add_source(KernelState& kernel, std::string text, std::int64_t parent,
                                        std::size_t island) {
  Hash128 hash = hash_string(text);
  if (auto it = kernel.by_hash.find(hash); it != kernel.by_hash.end()) return *it->second;
  auto entry = std::make_unique<SourceEntry>();
  entry->hash = hash;
  entry->parent = parent;
  entry->island = island % std::max<std::size_t>(1, kernel.archive.islands());
  entry->tunables = evolve::parse_tunables(text);
  const KernelTarget& target = kernels_[kernel.index];
  entry->block = coupled_block(text, entry->tunables, target.block_expressions);
  entry->keep_grid = entry->block && evolve::keeps_recorded_grid(text);
  for (Level level : kLevels) {
    if (level == Level::launch && entry->block) continue;
    if (!target.kokkos_label.empty() &&
        (level == Level::compiler || (level == Level::launch && !target.kokkos_blocks)))
      continue;
    if (auto space = levels_.build(level, entry->tunables, target.original_block,
                                   code_path(kernel, text), target.has_recorded_ptx,
                                   target.kokkos_blocks ? &*target.kokkos_blocks : nullptr))
      entry->spaces.emplace(level, std::move(*space));
  }
  kernel.novelty.add(text);
  sources_.emplace(hash, text);
  entry->text = std::move(text);
  SourceEntry& added = *entry;
  kernel.by_hash[hash] = entry.get();
  kernel.sources.push_back(std::move(entry));
  return added;
}

CodePath Search::code_path(const KernelState& kernel, const std::string& text) const {
  if (backend_ == config::Backend::host) return CodePath::host;
  const KernelTarget& target = kernels_[kernel.index];
  return text.empty() && !target.has_recorded_source ? CodePath::recorded : CodePath::nvrtc;
}

std::string Search::describe_effort() const {
  const Effort& e = effort_;
  std::ostringstream out;
  out.precision(3);
  out << std::fixed << "the search's own time: " << e.proposals << " proposals, of which "
      << e.optimizer_proposals << " by optimizers (fits " << e.fit << " s incl. waiting, conditioning "
      << e.condition << " s, candidate pools " << e.candidates << " s, batches " << e.select
      << " s); new sources " << e.sources << " s";
  if (mutation_worker_)
    out << " (waiting for the mutators " << mutation_worker_->waited_seconds() << " s)";
  out << "; observations " << e.observe << " s";
  return out.str();
}

std::string Search::describe_source(const Hash128& source) const {
  for (const auto& state : states_) {
    if (auto it = state->by_hash.find(source); it != state->by_hash.end())
      return it->second->parent < 0 ? "the original source"
                                    : "from candidate " + std::to_string(it->second->parent);
  }
  return "unknown";
}

Planned Search::plan(KernelState& kernel, SourceEntry& source, std::optional<Level> searched,
                     const bo::Configuration* searched_configuration,
                     run::CandidateLevel candidate_level, std::uint32_t generation) {
  const KernelTarget& target = kernels_[kernel.index];
  Planned p;
  replay::Variant& v = p.request.variant;
  v = target.base;
  v.source_text = source.text;
  v.source_name = target.compiled_name();
  const CodePath path = code_path(kernel, source.text);
  if (path == CodePath::host && v.passes.empty()) v.passes = config_.search.compiler.passes.baseline;
  if (path == CodePath::recorded) {
    // The recorded code: none of tune.yaml's compile settings act on it.
    v.compiler = replay::Compiler::recorded;
    v.entry.clear();
    v.defines.clear();
    v.include_dirs.clear();
    v.flags.clear();
  }
  std::string description;
  for (const auto& [level, space] : source.spaces) {
    const bo::Configuration* c = &space.defaults;
    if (searched == level) {
      c = searched_configuration;
    } else if (auto best = source.best.find(level); best != source.best.end()) {
      c = &best->second;
    }
    levels_.apply(level, space, *c, v);
    p.plan.levels[level] = *c;
    if (*c != space.defaults || searched == level)
      description += (description.empty() ? "" : " ") + space.space.describe(*c);
  }
  if (!source.tunables.empty()) v.defines[evolve::kTunableMacro] = "";
  if (source.block) {
    if (auto block = block_of(*source.block, source.tunables, v.defines)) {
      v.block = *block;
      v.keep_grid = source.keep_grid;
      if (!target.original_block || *block != *target.original_block)
        description += (description.empty() ? "" : " ") + std::string("block ") +
                       std::to_string(block->x) + "x" + std::to_string(block->y) + "x" +
                       std::to_string(block->z) + (source.keep_grid ? " (recorded grid)" : "");
    } else {
      log::debug("kernel ", target.name, ": block (", (*source.block)[0], ", ", (*source.block)[1],
                 ", ", (*source.block)[2], ") has no value here: launched as recorded");
    }
  }
  // A source run at its defaults: no level's optimiser may propose the same point meanwhile.
  if (!searched) {
    for (const auto& [level, space] : source.spaces)
      optimizer(source, level).add_pending(space.defaults);
  }
  p.request.kernel = kernel.index;
  p.request.options = run_options(kernel.index);
  run::CandidateRecord& r = p.record;
  r.id = next_id_++;
  r.generation = generation;
  r.parent = source.parent;
  r.kernel = static_cast<std::uint32_t>(kernel.index);
  r.source = source.hash;
  r.level = candidate_level;
  p.plan.searched = searched;
  r.plan = p.plan.encode();
  replay::Variant shown = v;
  shown.source_text.clear();
  r.configuration = replay::wire::encode(shown);
  r.description = description.empty() ? std::string("defaults") : description;
  outstanding_[r.id] = p;
  return p;
}

std::vector<Search::SourceEntry*> Search::ranked_sources(KernelState& kernel) {
  std::vector<SourceEntry*> ranked;
  for (auto& s : kernel.sources) {
    if (s->best_time < kInfinity) ranked.push_back(s.get());
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const SourceEntry* a, const SourceEntry* b) {
    return a->best_time < b->best_time;
  });
  // Before anything is measured, the original is the one to tune.
  if (ranked.empty()) ranked.push_back(kernel.sources.front().get());
  return ranked;
}

void Search::propose_sources(KernelState& kernel, std::size_t count, std::uint32_t generation,
                             std::vector<Planned>& out) {
  const KernelTarget& target = kernels_[kernel.index];
  std::size_t made = 0;
  while (made < count && !kernel.llm_sources.empty()) {
    auto [text, parent_hash] = std::move(kernel.llm_sources.front());
    kernel.llm_sources.pop_front();
    if (kernel.novelty.check(text) != evolve::NoveltyFilter::Verdict::novel) continue;
    SourceEntry* parent = kernel.by_hash.at(parent_hash);
    // Not mutated ahead: the mutators parse their parent with Clang in this process, and an LLM
    // answer is hostile until it has compiled and run in the sandbox. Once it has, observe()
    // asks for its mutations like any source entering the archive.
    SourceEntry& s = add_source(kernel, std::move(text), parent->candidate, parent->island);
    Planned p = plan(kernel, s, std::nullopt, nullptr, run::CandidateLevel::source, generation);
    p.record.description = "LLM rewrite of candidate " + std::to_string(parent->candidate);
    outstanding_[p.record.id].record.description = p.record.description;
    out.push_back(std::move(p));
    ++made;
  }
  if (made >= count || !mutating(kernel)) return;
  std::size_t islands = std::max<std::size_t>(1, kernel.archive.islands());
  std::size_t failures = 0;
  while (made < count && failures < 2 * islands + 2) {
    std::size_t island = (generation + made + failures) % islands;
    SourceEntry* parent = nullptr;
    if (kernel.archive.size(island) > 0) {
      const evolve::Elite& elite =
          kernel.archive.select_parent(island, config_.search.archive.exploration, rng_);
      parent = kernel.by_hash.at(elite.source);
    } else {
      std::vector<SourceEntry*> ranked = ranked_sources(kernel);
      parent = ranked[std::uniform_int_distribution<std::size_t>(0, ranked.size() - 1)(rng_)];
    }
    auto [it, fresh] = kernel.mutations.try_emplace(parent->hash);
    if (fresh) {
      evolve::MutationReport report =
          mutation_worker().take(mutation_request(kernel, *parent), while_waiting_);
      if (!report.diagnostics.empty()) {
        // The kernel's own source not parsing leaves its source level to the LLM alone: a user
        // hears of it (a source that a mutator or the LLM made is the search's own business).
        if (parent == kernel.sources.front().get())
          log::warning("kernels[", kernel.index, "] (", target.name,
                       "): the built-in mutators cannot parse its source ", target.source_name,
                       " with its defines, include_dirs and flags (-std=, -D, -U, -I), so they "
                       "make nothing of it: ",
                       first_lines(report.diagnostics));
        else
          log::debug("mutators: ", target.source_name, ": ", first_lines(report.diagnostics));
      }
      it->second = std::move(report.mutations);
    }
    std::vector<const evolve::Mutation*> novel;
    for (const evolve::Mutation& m : it->second) {
      if (kernel.novelty.check(m.source) == evolve::NoveltyFilter::Verdict::novel)
        novel.push_back(&m);
    }
    if (novel.empty()) {
      ++failures;
      continue;
    }
    const evolve::Mutation& m =
        *novel[std::uniform_int_distribution<std::size_t>(0, novel.size() - 1)(rng_)];
    SourceEntry& s = add_source(kernel, m.source, parent->candidate, island);
    mutate_ahead(kernel, s, MutationWorker::Need::speculative);
    Planned p = plan(kernel, s, std::nullopt, nullptr, run::CandidateLevel::source, generation);
    p.record.description = m.mutator + ": " + m.description;
    outstanding_[p.record.id].record.description = p.record.description;
    out.push_back(std::move(p));
    ++made;
  }
}

bool Search::mutating(const KernelState& kernel) const {
  return !kernels_[kernel.index].source.empty() && evolve::mutators_available() &&
         !config_.search.source.mutators.empty();
}

Hash128 Search::mutation_key(const KernelState& kernel, const Hash128& source) {
  return hash_string(source.hex() + " kernel " + std::to_string(kernel.index));
}

MutationRequest Search::mutation_request(const KernelState& kernel,
                                         const SourceEntry& parent) const {
  const KernelTarget& target = kernels_[kernel.index];
  MutationRequest request;
  request.parent = mutation_key(kernel, parent.hash);
  request.text = parent.text;
  request.file_name = target.compiled_name();
  request.entry = entry_in_source(target);
  request.language = backend_ == config::Backend::cuda ? evolve::SourceLanguage::cuda
                                                       : evolve::SourceLanguage::cpp;
  request.mutators = config_.search.source.mutators;
  evolve::MutationContext& context = request.context;
  if (target.original_block)
    context.recorded_block = {target.original_block->x, target.original_block->y,
                              target.original_block->z};
  for (const evolve::Tunable& t : parent.tunables) context.declared_tunables.push_back(t.name);
  context.launch_coupled = parent.block.has_value();
  context.template_arguments = target.template_arguments;
  // Read as the candidates are compiled, so that a source that includes a header from one of
  // the kernel's include_dirs, or uses a macro its defines give, parses.
  context.defines = target.base.defines;
  context.include_dirs = target.base.include_dirs;
  context.flags = reading_flags(target.base.flags);
  return request;
}

void Search::mutate_ahead(KernelState& kernel, const SourceEntry& parent,
                          MutationWorker::Need need) {
  if (!mutating(kernel) || kernel.mutations.contains(parent.hash)) return;
  if (need == MutationWorker::Need::likely && !kernel.mutated_ahead.insert(parent.hash).second)
    return;
  mutation_worker().prefetch(mutation_request(kernel, parent), need);
}

bool Search::mutations_asked_for(std::size_t kernel, const Hash128& source) const {
  return mutation_worker_ && mutation_worker_->asked_for(mutation_key(*states_.at(kernel), source));
}

std::optional<evolve::MutationReport> Search::original_mutations(std::size_t kernel) {
  KernelState& state = *states_.at(kernel);
  if (!mutating(state)) return std::nullopt;
  return mutation_worker().take(mutation_request(state, *state.sources.front()), while_waiting_);
}

MutationWorker& Search::mutation_worker() {
  if (!mutation_worker_)
    mutation_worker_ =
        std::make_unique<MutationWorker>(spare_cores(kMutatorThreads));
  return *mutation_worker_;
}

namespace {
// What a proposal cost, for the trace: where the time went and how much the model had to do.
std::string proposal_cost(const bo::Optimizer::Timing& t) {
  std::ostringstream out;
  out.precision(3);
  out << " in " << 1e3 * (t.fit + t.condition + t.candidates + t.select) << " ms (fit "
      << 1e3 * t.fit << ", conditioning " << 1e3 * t.condition << ", pool " << 1e3 * t.candidates
      << ", batch " << 1e3 * t.select << "; " << t.pool << " points, " << t.new_points
      << " new, " << t.gp_rows << " rows)";
  return out.str();
}
}  // namespace

bo::Optimizer& Search::optimizer(SourceEntry& source, Level level) {
  auto& slot = source.optimizers[level];
  if (!slot) {
    // tune.yaml's search.bo, with its own seed per source and level (the same in a resumed run).
    bo::Options options = config_.search.bo;
    options.seed = config_.search.seed ^ source.hash.low ^ (std::uint64_t(level) << 56);
    if (!fit_pool_made_) {
      fit_pool_made_ = true;
      if (const std::size_t threads = spare_cores(kFitThreads); threads > 0)
        fit_pool_ = std::make_shared<bo::FitPool>(threads);
    }
    options.fit_pool = fit_pool_;
    slot = std::make_unique<bo::Optimizer>(source.spaces.at(level).space, options);
  }
  return *slot;
}

void Search::propose_levels(KernelState& kernel, Level level, std::size_t count,
                            std::uint32_t generation, std::vector<Planned>& out,
                            PendingLimit limit) {
  std::size_t made = 0;
  for (SourceEntry* source : ranked_sources(kernel)) {
    if (made >= count) break;
    auto space = source->spaces.find(level);
    if (space == source->spaces.end()) continue;
    const std::tuple<std::size_t, Hash128, Level> key{kernel.index, source->hash, level};
    // The same numbers whether the proposals are made or replayed from the database, so that a
    // resumed run holds back, and comes back to, the same optimizers. One that found fewer
    // than it was asked for is not asked again in this proposal: asked again it might find
    // more (its random draws depend on what is pending), which a replay, taking its proposals
    // in one go, could not tell apart.
    if (declined_.contains(key)) continue;
    if (limit == PendingLimit::beyond && !held_back_.contains(key)) continue;
    bo::Optimizer& bo = optimizer(*source, level);
    std::size_t ask = count - made;
    if (limit == PendingLimit::within) {
      if (const std::size_t room = bo.pending_room(); room < ask) {
        ask = room;
        // One failing in a row is not come back to for the batch's rest: an idle slot costs
        // less than the lost GPU contexts such bursts were made of.
        if (!bo.failing_in_a_row()) held_back_.insert(key);
      }
    }
    if (ask == 0) continue;
    std::vector<bo::Configuration> proposed;
    if (replaying_) {
      auto& queue = replayed_[key];
      while (!queue.empty() && proposed.size() < ask) {
        proposed.push_back(std::move(queue.front()));
        queue.pop_front();
        bo.add_pending(proposed.back());
      }
    } else {
      proposed = bo.propose(ask);
      const bo::Optimizer::Timing& t = bo.last_timing();
      ++effort_.optimizer_proposals;
      effort_.fit += t.fit;
      effort_.condition += t.condition;
      effort_.candidates += t.candidates;
      effort_.select += t.select;
    }
    if (log::enabled(log::Level::trace))
      log::trace("kernel ", kernel.index, ", source ", source->hash.hex().substr(0, 8), ", ",
                 to_string(level), ": ", bo.observations().size(), " observed, ", ask, " asked",
                 limit == PendingLimit::beyond ? " beyond its room" : "",
                 bo.failing_in_a_row() ? " (failing in a row)" : "", ", ", proposed.size(),
                 " proposed", replaying_ ? std::string() : proposal_cost(bo.last_timing()));
    if (proposed.size() < ask) {
      held_back_.erase(key);
      declined_.insert(key);
    }
    for (const bo::Configuration& c : proposed) {
      out.push_back(plan(kernel, *source, level, &c, candidate_level_of(level), generation));
      ++made;
    }
  }
}

Planned Search::plan_recorded(KernelState& kernel, std::uint32_t generation) {
  const KernelTarget& target = kernels_[kernel.index];
  Planned p;
  replay::Variant& v = p.request.variant;
  v.source_name = target.compiled_name();
  v.compiler = replay::Compiler::recorded;  // the cubin at the recorded launch shape
  p.request.kernel = kernel.index;
  p.request.options = run_options(kernel.index);
  const Hash128 none = hash_string("");
  sources_.emplace(none, std::string());
  run::CandidateRecord& r = p.record;
  r.id = next_id_++;
  r.generation = generation;
  r.parent = -1;
  r.kernel = static_cast<std::uint32_t>(kernel.index);
  r.source = none;
  r.level = run::CandidateLevel::original;
  p.plan.recorded = true;
  r.plan = p.plan.encode();
  replay::Variant shown = v;
  r.configuration = replay::wire::encode(shown);
  r.description = "the application's code as recorded";
  outstanding_[r.id] = p;
  return p;
}

void Search::propose_originals(KernelState& kernel, std::uint32_t generation,
                               std::vector<Planned>& out) {
  const KernelTarget& target = kernels_[kernel.index];
  SourceEntry& first = *kernel.sources.front();
  const CodePath path = code_path(kernel, first.text);
  if (path == CodePath::host) {
    out.push_back(
        plan(kernel, first, std::nullopt, nullptr, run::CandidateLevel::original, generation));
    return;
  }
  if (path == CodePath::nvrtc) {
    // The application's code as recorded, then its source through NVRTC at its defaults.
    const bool recorded = target.has_recorded_cubin || target.has_recorded_ptx;
    if (recorded) out.push_back(plan_recorded(kernel, generation));
    out.push_back(plan(kernel, first, std::nullopt, nullptr,
                       recorded ? run::CandidateLevel::rebuilt : run::CandidateLevel::original,
                       generation));
    return;
  }
  // The recorded path: the cubin as it is, then the recorded PTX through the JIT. The source's
  // defaults are the recorded code unless tune.yaml imposes a block on every candidate.
  if (target.base.block)
    out.push_back(plan_recorded(kernel, generation));
  else
    out.push_back(
        plan(kernel, first, std::nullopt, nullptr, run::CandidateLevel::original, generation));
  auto space = first.spaces.find(Level::compiler);
  if (space == first.spaces.end() || !target.has_recorded_cubin) return;
  std::optional<bo::Configuration> found = levels_.recorded_jit(space->second);
  if (!found) return;
  const bo::Configuration& jit = *found;
  const bo::Space& s = space->second.space;
  optimizer(first, Level::compiler).add_pending(jit);
  out.push_back(
      plan(kernel, first, Level::compiler, &jit, run::CandidateLevel::rebuilt, generation));
  out.back().record.description = "the recorded PTX through the JIT: " + s.describe(jit);
  outstanding_[out.back().record.id].record.description = out.back().record.description;
}

std::vector<Planned> Search::propose(std::uint32_t generation, std::size_t count) {
  std::vector<Planned> out = propose_now(generation, count);
  ++effort_.proposals;
  proposals_.push_back({generation, count, generations_observed_, out.size()});
  return out;
}

std::vector<Planned> Search::propose_now(std::uint32_t generation, std::size_t count) {
  std::vector<Planned> out;
  held_back_.clear();
  declined_.clear();
  if (next_id_ == 0) {
    for (auto& state : states_) propose_originals(*state, generation, out);
  }
  std::size_t left = count > out.size() ? count - out.size() : 0;
  // The kernels share the batch evenly over the run; within a kernel the slots (new sources,
  // then each level) share its candidates by tune.yaml's shares, over the run too. A slot that
  // cannot use what it is given (nothing left to propose, or its optimizers at their pending
  // limit) passes it on, and is not owed it. What no slot could take then goes, by the same
  // shares, to the optimizers held back at their limit, rather than leave evaluators idle.
  auto fill = [&](PendingLimit limit) {
    std::vector<bool> kernel_can(states_.size(), true);
    while (left > 0) {
      std::vector<double> kernel_weights(states_.size(), 0);
      for (std::size_t k = 0; k < states_.size(); ++k) kernel_weights[k] = kernel_can[k] ? 1 : 0;
      std::vector<std::size_t> per_kernel = fair_shares(left, kernel_weights, kernel_received_);
      std::size_t made_now = 0;
      for (std::size_t k = 0; k < states_.size(); ++k) {
        if (per_kernel[k] == 0) continue;
        KernelState& kernel = *states_[k];
        auto held_back = [&](Level level) {
          return std::any_of(held_back_.begin(), held_back_.end(), [&](const auto& key) {
            return std::get<0>(key) == k && std::get<2>(key) == level;
          });
        };
        const bool within = limit == PendingLimit::within;
        std::vector<double> weights = {
            within && config_.search.source.enabled ? config_.search.source.share : 0};
        for (Level level : kLevels)
          weights.push_back(levels_.enabled(level) && (within || held_back(level))
                                ? levels_.share(level)
                                : 0);
        std::size_t want = per_kernel[k], made = 0;
        while (made < want) {
          if (std::all_of(weights.begin(), weights.end(), [](double w) { return w <= 0; })) break;
          std::vector<std::size_t> counts = fair_shares(want - made, weights, kernel.received);
          for (std::size_t slot = 0; slot < counts.size(); ++slot) {
            if (counts[slot] == 0) continue;
            std::size_t start = out.size();
            if (slot == 0) {
              const auto began = Clock::now();
              propose_sources(kernel, counts[slot], generation, out);
              effort_.sources += seconds_since(began);
            } else {
              propose_levels(kernel, kLevels[slot - 1], counts[slot], generation, out, limit);
            }
            const std::size_t got = out.size() - start;
            made += got;
            if (got < counts[slot]) weights[slot] = 0;  // spent for this generation
          }
        }
        if (made < want) {
          kernel_can[k] = false;
          kernel_received_[k] -= static_cast<double>(want - made);
        }
        made_now += made;
        left -= made;
      }
      if (made_now == 0) break;
    }
  };
  fill(PendingLimit::within);
  if (left > 0 && !held_back_.empty()) fill(PendingLimit::beyond);
  held_back_.clear();
  return out;
}

void Search::observe(const run::CandidateRecord& done) {
  const auto began = Clock::now();
  struct AddTime {  // every return below counts
    double& to;
    Clock::time_point from;
    ~AddTime() { to += seconds_since(from); }
  } add_time{effort_.observe, began};
  auto it = outstanding_.find(done.id);
  if (it == outstanding_.end())
    throw Error("the search has no candidate " + std::to_string(done.id) + " in flight");
  Planned planned = std::move(it->second);
  outstanding_.erase(it);
  KernelState& kernel = *states_.at(planned.record.kernel);
  const Plan& plan = planned.plan;
  // The recorded code is the baseline, not a point of any level's space.
  if (plan.recorded) return;
  SourceEntry& source = *kernel.by_hash.at(planned.record.source);
  bool ok = done.outcome == Outcome::ok;
  // The cost is the evaluation as its evaluator saw it (compile, runs, a lost child's
  // replacement): what the run database keeps, so that a resumed run weighs the same.
  bo::Outcome outcome =
      ok ? bo::Outcome::success(done.seconds, done.evaluation_seconds)
         : bo::Outcome::failed(std::string(to_string(done.outcome)), done.evaluation_seconds);
  const std::optional<Level> level = plan.searched;
  auto configuration_of = [&](Level l) { return plan.levels.at(l); };
  auto observe_in = [&](bo::Optimizer& o, const bo::Configuration& c) {
    o.observe(c, outcome);
    if (std::find(observed_optimizers_.begin(), observed_optimizers_.end(), &o) ==
        observed_optimizers_.end())
      observed_optimizers_.push_back(&o);
  };
  if (level) {
    observe_in(optimizer(source, *level), configuration_of(*level));
  } else {
    // A new source ran with every level at its defaults: that is a first observation for each.
    if (source.candidate < 0) source.candidate = static_cast<std::int64_t>(done.id);
    for (const auto& [l, space] : source.spaces) observe_in(optimizer(source, l), space.defaults);
  }
  if (ok) {
    if (done.seconds < source.best_time) {
      source.best_time = done.seconds;
      source.best_description = done.description;
      if (level) source.best[*level] = configuration_of(*level);
    }
    evolve::KernelResources resources;
    if (done.registers >= 0)
      resources.registers_per_thread = static_cast<std::uint32_t>(done.registers);
    if (done.spilled_bytes >= 0)
      resources.spill_bytes = static_cast<std::uint64_t>(done.spilled_bytes);
    if (done.shared_bytes >= 0)
      resources.shared_memory_bytes = static_cast<std::uint64_t>(done.shared_bytes);
    if (done.code_bytes > 0) resources.code_bytes = done.code_bytes;
    if (!level) source.resources = resources;
    kernel.archive.add(source.island, evolve::Elite{done.id, source.hash, done.seconds,
                                                    evolve::behaviour_of(resources)});
    mutate_ahead(kernel, source);  // a parent the mutators may be asked for from now on
  } else {
    kernel.recent_failures.push_back("candidate " + std::to_string(done.id) + " (" +
                                     std::string(to_string(done.level)) + ", " + done.description +
                                     "): " + std::string(to_string(done.outcome)) + ": " +
                                     first_lines(done.message));
    if (kernel.recent_failures.size() > kRecentFailures) kernel.recent_failures.pop_front();
  }
}

void Search::end_generation() {
  for (auto& state : states_) state->archive.end_generation();
  // Their next proposals' fits start now, on the pool, while rank 0 takes results and proposes
  // for others (the proposals are the same: a fit depends on the history alone).
  if (!restoring_)
    for (bo::Optimizer* o : observed_optimizers_) o->fit_ahead();
  observed_optimizers_.clear();
  ++generations_observed_;
}

std::vector<evolve::ChatRequest> Search::llm_requests(std::size_t count) {
  std::vector<evolve::ChatRequest> requests;
  if (!prompts_) return requests;
  for (std::size_t i = 0; i < count; ++i) {
    KernelState& kernel = *states_[i % states_.size()];
    const KernelTarget& target = kernels_[kernel.index];
    if (target.source.empty()) continue;
    std::vector<SourceEntry*> ranked = ranked_sources(kernel);
    SourceEntry* parent = ranked.front();
    std::size_t island = i % std::max<std::size_t>(1, kernel.archive.islands());
    if (kernel.archive.size(island) > 0) {
      parent = kernel.by_hash.at(
          kernel.archive.select_parent(island, config_.search.archive.exploration, prompt_rng_).source);
    }
    const std::string entry = entry_in_source(target);
    evolve::PromptContext context;
    context.entry = entry;
    context.signature = evolve::entry_signature(parent->text, entry);
    context.language = backend_ == config::Backend::cuda ? "CUDA" : "C++";
    context.compiler = backend_ == config::Backend::cuda ? "NVRTC" : "Clang";
    context.device = device_;
    context.source = parent->text;
    context.resources = parent->resources;
    context.current_time_ms = parent->best_time < kInfinity ? parent->best_time * 1e3 : 0;
    for (std::size_t r = 0; r < ranked.size() && r < 3; ++r)
      context.best.push_back({ranked[r]->best_description, ranked[r]->best_time * 1e3});
    context.failures.assign(kernel.recent_failures.begin(), kernel.recent_failures.end());
    evolve::ChatRequest request;
    request.messages = prompts_->build(context);
    request.tag = next_tag_++;
    llm_parents_[request.tag] = {kernel.index, parent->hash};
    requests.push_back(std::move(request));
  }
  return requests;
}

void Search::take_llm_answer(const evolve::ChatResult& answer) {
  auto it = llm_parents_.find(answer.tag);
  if (it == llm_parents_.end()) return;
  auto [kernel_index, parent_hash] = it->second;
  llm_parents_.erase(it);
  if (answer.status != evolve::ChatStatus::ok) {
    ++rejected_answers_;
    log::info("LLM request failed: ", answer.error);
    return;
  }
  KernelState& kernel = *states_[kernel_index];
  const KernelTarget& target = kernels_[kernel_index];
  const std::string entry = entry_in_source(target);
  evolve::Candidate candidate =
      evolve::candidate_from_response(kernel.by_hash.at(parent_hash)->text, answer.content, entry);
  if (!candidate.ok) {
    ++rejected_answers_;
    log::info("LLM answer rejected: ", candidate.reason);
    return;
  }
  kernel.llm_sources.emplace_back(std::move(candidate.source), parent_hash);
}

std::string Search::state() const {
  std::ostringstream rng;
  rng << rng_;
  // What json{{"rng", ...}, {"proposals", [[generation, count, observed_before, made], ...]},
  // {"next_id", ...}}.dump() writes (its keys sorted), the proposals' part kept from the last call.
  for (; proposals_dumped_ < proposals_.size(); ++proposals_dumped_) {
    const Proposal& p = proposals_[proposals_dumped_];
    if (proposals_dumped_ > 0) proposals_text_ += ',';
    proposals_text_ += json{p.generation, p.count, p.observed_before, p.made}.dump();
  }
  return R"({"next_id":)" + std::to_string(next_id_) + R"(,"proposals":[)" + proposals_text_ +
         R"(],"rng":)" + json(rng.str()).dump() + "}";
}

std::vector<std::vector<Planned>> Search::restore(const run::RunRecord& record) {
  restoring_ = true;
  struct Restored {
    bool& flag;
    ~Restored() { flag = false; }
  } restored{restoring_};
  json state = json::parse(record.search_state, nullptr, false);
  if (state.is_discarded() || !(state.contains("proposals") || state.contains("requested")))
    throw FormatError("the run database holds no search state to resume from");
  // Where each committed generation's candidates lie in the record.
  std::vector<std::pair<std::size_t, std::size_t>> rows;
  for (std::size_t at = 0; rows.size() < record.generations;) {
    const std::size_t first = at;
    while (at < record.candidates.size() &&
           record.candidates[at].generation == static_cast<std::uint32_t>(rows.size()))
      ++at;
    rows.emplace_back(first, at);
  }
  std::vector<Proposal> events;
  if (state.contains("proposals")) {
    for (const json& p : state.at("proposals"))
      events.push_back({p.at(0).get<std::uint32_t>(), p.at(1).get<std::size_t>(),
                        p.at(2).get<std::uint32_t>(), p.at(3).get<std::size_t>()});
  } else {
    // Written before the job proposed ahead: each generation after the one before it.
    const auto requested = state.at("requested").get<std::vector<std::size_t>>();
    for (std::uint32_t g = 0; g < requested.size() && g < record.generations; ++g)
      events.push_back({g, requested[g], g, rows[g].second - rows[g].first});
  }
  std::uint32_t observed = 0;
  auto observe_next = [&] {
    for (std::size_t i = rows[observed].first; i < rows[observed].second; ++i)
      observe(record.candidates[i]);
    end_generation();
    ++observed;
  };
  std::vector<std::vector<Planned>> in_flight;
  for (const Proposal& event : events) {
    const std::uint32_t g = event.generation;
    if (event.observed_before > record.generations || event.observed_before > g)
      throw FormatError("the run database's search state says generation " + std::to_string(g) +
                        " was proposed after " + std::to_string(event.observed_before) +
                        " generation(s) were observed, which cannot be");
    while (observed < event.observed_before) observe_next();
    const bool committed = g < record.generations && event.made > 0;
    const std::size_t first = committed ? rows[g].first : 0, at = committed ? rows[g].second : 0;
    replayed_.clear();
    for (std::size_t i = first; i < at; ++i) {
      const run::CandidateRecord& c = record.candidates[i];
      // Sources the LLM gave come back from the database, in the order they were used.
      if (c.level == run::CandidateLevel::source && c.description.starts_with("LLM rewrite") &&
          c.kernel < states_.size()) {
        KernelState& kernel = *states_[c.kernel];
        Hash128 parent = kernel.sources.front()->hash;
        for (const auto& s : kernel.sources) {
          if (s->candidate == c.parent) parent = s->hash;
        }
        kernel.llm_sources.emplace_back(record.sources.at(c.source), parent);
      }
      Plan plan;
      try {
        plan = Plan::decode(c.plan);
      } catch (const FormatError& e) {
        throw FormatError("candidate " + std::to_string(c.id) +
                          " of the run database: " + e.what());
      }
      if (!plan.searched) continue;
      replayed_[{c.kernel, c.source, *plan.searched}].push_back(plan.levels.at(*plan.searched));
    }
    // Committed generations take the optimizers' proposals from the database; the others
    // (proposed but not committed before the stop, or proposals that found nothing then) are
    // proposed again from the same state, so they come out as they did.
    replaying_ = committed;
    std::vector<Planned> again;
    try {
      again = propose(g, event.count);
    } catch (...) {
      replaying_ = false;
      throw;
    }
    replaying_ = false;
    if (again.size() != event.made ||
        (committed && again.size() != at - first))
      throw FormatError("generation " + std::to_string(g) + " had " +
                        std::to_string(committed ? at - first : event.made) +
                        " candidates, the search proposes " + std::to_string(again.size()) +
                        " again: the database belongs to another configuration or r3 version");
    if (again.empty()) continue;
    if (!committed) {
      in_flight.push_back(std::move(again));
      continue;
    }
    for (std::size_t i = first; i < at; ++i) {
      const run::CandidateRecord& c = record.candidates[i];
      const Planned& p = again[i - first];
      if (p.record.id != c.id || p.record.source != c.source || p.record.plan != c.plan)
        throw FormatError("candidate " + std::to_string(c.id) +
                          " is not what the search proposes again (" + p.record.description +
                          " instead of " + c.description +
                          "): the database belongs to another configuration or r3 version");
    }
  }
  while (observed < record.generations) observe_next();
  std::ostringstream rng;
  rng << rng_;
  if (rng.str() != state.at("rng").get<std::string>())
    log::warning("the resumed search's random state differs from the one recorded");
  return in_flight;
}

}  // namespace r3::tune
