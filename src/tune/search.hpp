// Rank 0's search: which candidates each generation evaluates. New sources come from the LLM's
// answers or the built-in mutators, applied to parents the MAP-Elites archive selects; the
// compiler, launch and parameter levels of the best sources are tuned by one Bayesian optimiser
// per source and level. Shares of the batch per level come from tune.yaml.
//
// Everything the search decides follows from its seed, the candidates it was told about and
// their outcomes, in order: restore() replays a run database into the state an uninterrupted
// run had at the same generation, so a resumed run proposes the same next batch.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "levels.hpp"
#include "mutation_worker.hpp"
#include "plan.hpp"
#include "r3/bo/fit_pool.hpp"
#include "r3/bo/optimizer.hpp"
#include "r3/capture.hpp"
#include "r3/evolve/archive.hpp"
#include "r3/evolve/launch_block.hpp"
#include "r3/evolve/llm_client.hpp"
#include "r3/evolve/prompt.hpp"
#include "r3/replay/sandbox.hpp"
#include "r3/run_database.hpp"

namespace r3::tune {

// A kernel of tune.yaml, resolved against the capture.
struct KernelTarget {
  std::size_t capture_index = 0;
  std::string name;
  std::vector<std::size_t> launches;  // empty: all
  std::string source_name;            // file name, for diagnostics and prompts
  // The source file's absolute path: the name it is parsed and compiled under, so that its
  // quoted includes resolve beside it, as in the application's build, and never in the job's
  // working directory. Empty without a source.
  std::string source_path;
  // What the source is parsed and compiled under: its path, else (a target made in a test) its
  // name.
  const std::string& compiled_name() const {
    return source_path.empty() ? source_name : source_path;
  }
  std::string source;                 // the original source text; empty: the recorded code
  // The kernel as its source names it ("MatrixMul", not "_Z9MatrixMulILi32EEvPf"): what the
  // mutators, the prompts and the answers' signature check look for. Empty: `name`.
  std::string source_entry;
  // The recorded instance's template arguments ("MatrixMul<32, float>": "32", "float").
  std::vector<std::string> template_arguments;
  replay::Variant base;               // entry, defines, include dirs, flags of tune.yaml
  // The block the original runs with (tune.yaml's, else the first selected launch's): the
  // launch level's default point, so that the original keeps its shape.
  std::optional<capture::Dim3> original_block;
  // CUDA: what the capture holds of the kernel's code. The original candidate is the recorded
  // cubin (what the application runs); sources are rebuilt by NVRTC, and without one the
  // recorded PTX can go through the JIT.
  bool has_recorded_cubin = false;
  bool has_recorded_ptx = false;
  bool has_recorded_source = false;
  // Recorded by its Kokkos label: what a tuned Kokkos application can be given is what Kokkos'
  // tuning interface sets (an MDRange tile, a team shape: the launch level), not compiler
  // options, which would need the application rebuilt.
  std::string kokkos_label;
  // For a Kokkos kernel, the blocks each dimension of its launch level takes: those Kokkos can be
  // given and replay can launch as Kokkos would (r3/replay/kokkos_policy.hpp): an MDRange
  // policy's tile (search.launch's lists), a TeamPolicy's vector length and team size where the
  // application left them to Kokkos (Kokkos::AUTO). nullopt: its launch level would measure
  // launches the application cannot make, and nothing of it is searched.
  std::optional<BlockChoices> kokkos_blocks;
  // tune.yaml's block when it names tunables ([TILE, TILE, 1]): the launch of every source that
  // declares them follows their values.
  std::optional<evolve::BlockExpressions> block_expressions;
  // Regions the capture has no element type for, typed from the source (verify.region_types).
  std::map<std::string, capture::ElementType> region_types;
};

// The block a source declares (R3_LAUNCH_BLOCK) or, where it declares every tunable they name,
// tune.yaml's block expressions; nullopt: the launch level shapes its launches.
std::optional<evolve::BlockExpressions> coupled_block(
    const std::string& text, const std::vector<evolve::Tunable>& tunables,
    const std::optional<evolve::BlockExpressions>& configured);
// The block those expressions give with the tunables' values (defaults, overridden by
// `defines`); nullopt when one has no positive value.
std::optional<capture::Dim3> block_of(const evolve::BlockExpressions& block,
                                      const std::vector<evolve::Tunable>& tunables,
                                      const std::map<std::string, std::string>& defines);

// The kernel's name in its source: tune.yaml's entry, else source_entry, else its name.
std::string entry_in_source(const KernelTarget& target);

// Those of a kernel's flags that change how its source reads (-std=, -D, -U, -I): what Clang is
// given where it only reads the source (cutting the unit from the application's file, the
// built-in mutators). The code generation flags are for the candidates' compiles, and Clang
// refuses those it does not know (NVRTC's --use_fast_math).
std::vector<std::string> reading_flags(const std::vector<std::string>& flags);

struct Planned {
  run::CandidateRecord record;  // with id, generation, parent, kernel, source, level, plan
  Plan plan;                    // what record.plan encodes
  replay::Request request;      // request.kernel: the kernel's index in tune.yaml
};

class Search {
 public:
  Search(const config::TuneConfig& config, config::Backend backend,
         const capture::CaptureReader& capture, std::vector<KernelTarget> kernels);
  ~Search();

  // How a candidate of kernels()[kernel] is run: tune.yaml's timing and verification, with the
  // element types its source gives the regions.
  replay::RunOptions run_options(std::size_t kernel) const;

  // Up to `count` candidates for generation `generation` (fewer when the space is spent; none
  // may mean none until the candidates in flight are observed).
  std::vector<Planned> propose(std::uint32_t generation, std::size_t count);
  // Called every few milliseconds while propose() waits for the mutators (a new parent's
  // rewrites are parsed and compiled: up to a second for a CUDA kernel). It must not call back
  // into the search; the job hands out work and takes results meanwhile.
  void set_while_waiting(std::function<void()> work) { while_waiting_ = std::move(work); }
  // The outcome of a proposed candidate (in proposal order within a generation).
  void observe(const run::CandidateRecord& done);
  void end_generation();

  // LLM prompts for the next generation's sources (none when no endpoint is configured), and
  // their answers, which become candidates of a later propose().
  std::vector<evolve::ChatRequest> llm_requests(std::size_t count);
  void take_llm_answer(const evolve::ChatResult& answer);
  std::size_t llm_answers_rejected() const { return rejected_answers_; }
  // Whether rank 0's mutators were ever asked for the mutations of kernels()[kernel]'s source
  // `source`, i.e. parsed it with Clang in this process.
  bool mutations_asked_for(std::size_t kernel, const Hash128& source) const;
  // What the built-in mutators make of kernels()[kernel]'s own source, as the search takes it
  // when it first picks that source as a parent (r3-mpi --dry-run says it); nullopt where they
  // do not run for the kernel (no source, none configured, a build without Clang).
  std::optional<evolve::MutationReport> original_mutations(std::size_t kernel);

  std::string state() const;  // for the run database
  // Replays a run database: proposes each recorded generation again and observes its recorded
  // outcomes, in the order the run did (a generation may have been proposed before the ones
  // ahead of it were observed: the state records after how many). Returns the generations the
  // run had proposed but not committed, proposed again as they were then. Throws FormatError
  // when the database does not belong to this configuration.
  std::vector<std::vector<Planned>> restore(const run::RunRecord& record);

  // Where the search's own time went (wall seconds, summed over the run): what limits rank 0
  // once evaluators wait for it. The optimizers' parts are their Timing's (r3/bo/optimizer.hpp);
  // "fit" includes waiting for a fit the pool had not finished.
  struct Effort {
    std::size_t proposals = 0, optimizer_proposals = 0;
    double sources = 0;  // new sources: mutations, LLM answers (waiting for the mutators too)
    double fit = 0, condition = 0, candidates = 0, select = 0;
    double observe = 0;
  };
  const Effort& effort() const { return effort_; }
  std::string describe_effort() const;

  const std::map<Hash128, std::string>& sources() const { return sources_; }
  std::uint64_t next_id() const { return next_id_; }
  const std::vector<KernelTarget>& kernels() const { return kernels_; }
  std::string describe_source(const Hash128& source) const;

 private:
  struct SourceEntry;
  struct KernelState;
  SourceEntry& add_source(KernelState& kernel, std::string text, std::int64_t parent,
                          std::size_t island);
  std::vector<Planned> propose_now(std::uint32_t generation, std::size_t count);
  Planned plan(KernelState& kernel, SourceEntry& source, std::optional<Level> searched,
               const bo::Configuration* searched_configuration, run::CandidateLevel candidate_level,
               std::uint32_t generation);
  // The first candidates of a kernel: the application's own code as recorded ("original") and,
  // where candidates are rebuilt from source or PTX, the same code rebuilt ("rebuilt").
  void propose_originals(KernelState& kernel, std::uint32_t generation, std::vector<Planned>& out);
  Planned plan_recorded(KernelState& kernel, std::uint32_t generation);
  CodePath code_path(const KernelState& kernel, const std::string& text) const;
  // Each level's share of the candidates so far, carried across generations: how many of
  // `count` each of the weighted slots gets now.
  std::vector<std::size_t> fair_split(KernelState& kernel, std::size_t count,
                                      const std::vector<double>& weights);
  void propose_sources(KernelState& kernel, std::size_t count, std::uint32_t generation,
                       std::vector<Planned>& out);
  // Whether the built-in mutators make new sources of this kernel.
  bool mutating(const KernelState& kernel) const;
  MutationRequest mutation_request(const KernelState& kernel, const SourceEntry& parent) const;
  // The mutation worker's key for a source of a kernel (one worker serves every kernel).
  static Hash128 mutation_key(const KernelState& kernel, const Hash128& source);
  // Asks the mutation worker for a parent's mutations ahead of need: `likely` for a source in the
  // archive, `speculative` for one the mutators just made (made when nothing likelier waits).
  void mutate_ahead(KernelState& kernel, const SourceEntry& parent,
                    MutationWorker::Need need = MutationWorker::Need::likely);
  // Within the pending limit (bo::Options::pending_per_observation) each optimizer proposes at
  // most its pending_room(), and one that stops there is held back; beyond it, only the ones
  // held back propose, for the batch's rest that no other work could take.
  enum class PendingLimit { within, beyond };
  void propose_levels(KernelState& kernel, Level level, std::size_t count, std::uint32_t generation,
                      std::vector<Planned>& out, PendingLimit limit = PendingLimit::within);
  std::vector<SourceEntry*> ranked_sources(KernelState& kernel);
  bo::Optimizer& optimizer(SourceEntry& source, Level level);  // made on first use

  const config::TuneConfig& config_;
  config::Backend backend_;
  LevelBuilder levels_;
  std::vector<KernelTarget> kernels_;
  std::vector<std::unique_ptr<KernelState>> states_;
  std::map<Hash128, std::string> sources_;
  std::mt19937_64 rng_;
  // The prompts' parents: drawn apart from rng_, since a resume does not ask for the prompts
  // again and the proposals must not depend on them.
  std::mt19937_64 prompt_rng_;
  std::uint64_t next_id_ = 0;
  // While restore() replays a generation: the configurations each optimizer proposed in it, by
  // (kernel, source, level), in order. An optimizer's proposals depend only on its seed and its
  // observations (r3/bo/optimizer.hpp), so they are taken from the database instead of being
  // computed again (a GP fit per generation made resuming a long run take minutes).
  std::map<std::tuple<std::size_t, Hash128, Level>, std::deque<bo::Configuration>> replayed_;
  bool replaying_ = false;
  // The optimizers, by (kernel, source, level), that stopped at their pending limit in the
  // proposal being made (what it may come back to).
  std::set<std::tuple<std::size_t, Hash128, Level>> held_back_;
  // Those that found fewer than they were asked for in it: not asked again until the next.
  std::set<std::tuple<std::size_t, Hash128, Level>> declined_;
  std::map<std::uint64_t, Planned> outstanding_;  // proposed, not yet observed
  std::unique_ptr<evolve::PromptBuilder> prompts_;
  std::unique_ptr<MutationWorker> mutation_worker_;  // made when a kernel is mutated
  MutationWorker& mutation_worker();
  // Fits the optimizers' hyperparameters ahead of their proposals, on the cores rank 0 has to
  // spare (none: in place); made with the first optimizer. The optimizers observed in the
  // generation being observed, whose next fits end_generation() starts.
  std::shared_ptr<bo::FitPool> fit_pool_;
  bool fit_pool_made_ = false;
  std::vector<bo::Optimizer*> observed_optimizers_;
  bool restoring_ = false;  // restore() observes the history: nothing is fitted ahead for it
  std::function<void()> while_waiting_;  // set_while_waiting()
  capture::DeviceInfo device_;
  std::size_t rejected_answers_ = 0;
  std::map<std::uint64_t, std::pair<std::size_t, Hash128>> llm_parents_;  // tag -> kernel, parent
  std::uint64_t next_tag_ = 1;
  // Every propose() call, in order, for resume: its generation and count, how many generations
  // had been observed then, and how many candidates it made (0: nothing then; the job asks
  // again after the next observation).
  struct Proposal {
    std::uint32_t generation = 0;
    std::size_t count = 0;
    std::uint32_t observed_before = 0;
    std::size_t made = 0;
  };
  std::vector<Proposal> proposals_;
  // state()'s text of proposals_[0, proposals_dumped_), kept: the list only grows, and writing it
  // all out at every commit grew with the run.
  mutable std::string proposals_text_;
  mutable std::size_t proposals_dumped_ = 0;
  std::uint32_t generations_observed_ = 0;
  std::vector<double> kernel_received_;  // candidates each kernel got so far
  Effort effort_;
};

// Splits `count` among slots by `weights`, given what each slot `received` before: each
// candidate goes to the slot furthest below its share of the total so far (ties to the earlier
// slot), so that rounding never starves a slot over a run, whatever the batch size. Slots of
// weight 0 get nothing. `received` is updated.
std::vector<std::size_t> fair_shares(std::size_t count, const std::vector<double>& weights,
                                     std::vector<double>& received);

}  // namespace r3::tune
