// The tuning job: set-up checked on rank 0 (master.cpp), the capture broadcast, then a flow of
// candidates. Rank 0 proposes a generation whenever the queue runs low, so evaluators never wait
// for the search; the dispatcher hands each candidate to whichever evaluator has room; once all
// of a generation's results are in (generations complete in any order, they are taken in
// order), the search observes them and the generation is committed to run.h5. The search
// records after how many observed generations it proposed each one, so a resume replays the
// same order (search.hpp).
#include "r3/tune/job.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <limits>
#include <map>
#include <optional>

#include "budget.hpp"
#include "clock.hpp"
#include "confirmation.hpp"
#include "dispatcher.hpp"
#include "evaluator.hpp"
#include "master.hpp"
#include "protocol.hpp"
#include "r3/error.hpp"
#include "r3/exit_codes.hpp"
#include "r3/files.hpp"
#include "r3/log.hpp"
#include "r3/report/results.hpp"
#include "r3/secrets.hpp"
#include "results.hpp"
#include "stop_signals.hpp"
#include "summary.hpp"

extern char** environ;

namespace r3::tune {
namespace {

// At most this many generations proposed whose results are not all in: pending candidates are
// what the optimizers guess at (kriging believer), and the search should not run far ahead of
// what it knows. How far it does run ahead is queue_target()'s: as many candidates as the
// evaluators get through during the slowest recent proposal (one that waits for a new parent's
// mutations: up to ~1.3 s, 150 candidates of the demo's size on two H100s). At 8 the queue ran
// dry during those waits (busy 74% in such windows, simulated; 89% at 32).
constexpr std::size_t kMostGenerationsInFlight = 32;
// Generations are observed and committed in order, so one slow candidate (a lost CUDA context:
// about 2.7 s on an H100 against candidates of 10-20 ms; a timeout) holds every later generation
// uncommitted. Those whose results are all in do not count above, or the other evaluators would
// run out of work after the generations above (8 were 0.2 s on two H100s) and wait for it; this
// bounds them all.
constexpr std::size_t kMostGenerationsUncommitted = 256;

// A generation's candidates when tune.yaml leaves search.batch_size at 0: eight per evaluator,
// at most 256. Rank 0's work per generation is mostly one model per optimizer asked, whatever
// it is asked for, so larger generations cost it less per candidate: on four H100s, with the
// demo's 10 ms candidates, one and two evaluators did 99 and 169 candidates/s at two per
// evaluator (76% busy, efficiency 0.85; rank 0 searching 93% of the time), 138 and 269 at eight
// (85%, 0.98), 152 and 292 at sixteen. From 32 to 128 evaluators the generations stay at 256,
// and beyond they are two per evaluator: at the cluster's sizes, with candidates of seconds, rank
// 0 keeps up at two per evaluator (simulated).
std::size_t default_batch_size(std::size_t evaluators) {
  constexpr std::size_t kPerEvaluator = 8, kMost = 256;
  return std::max<std::size_t>(1, std::min(kPerEvaluator * evaluators,
                                           std::max(kMost, 2 * evaluators)));
}

// The batch job's end (seconds since the epoch) when the scheduler says: Slurm's
// SLURM_JOB_END_TIME, or R3_JOB_END_TIME for other schedulers.
std::optional<double> job_end_time() {
  for (const char* name : {"R3_JOB_END_TIME", "SLURM_JOB_END_TIME"}) {
    if (const char* value = std::getenv(name); value && *value) {
      char* end = nullptr;
      double t = std::strtod(value, &end);
      if (end && *end == '\0' && t > 0) return t;
      log::warning(name, "='", value, "' is not a time in seconds since the epoch; ignored");
    }
  }
  return std::nullopt;
}

double now_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Writes run.h5; a failing write (a full disk, a vanished directory) leaves the last commit as it
// was, and says so: nothing committed is lost, and --resume redoes only what this write held.
void commit(Master& m, const std::string& what, std::uint32_t committed_before) {
  try {
    m.database_writer.commit(m.database, m.record);
  } catch (const Error& e) {
    throw Error("cannot commit " + what + ": " + e.message() + "; " + m.database.string() +
                    " still holds the " + std::to_string(committed_before) +
                    " generation(s) committed before: make room, then 'r3-mpi " +
                    m.config.file.string() + " --resume' goes on from there",
                e.context());
  }
}

// The search phase of a job: proposals, the flow of results, commits, until the budget is spent
// or a signal comes.
class SearchLoop {
 public:
  SearchLoop(Master& m, Dispatcher& dispatcher)
      : m_(m),
        dispatcher_(dispatcher),
        evaluators_(static_cast<std::size_t>(dispatcher.evaluators())),
        batch_size_(m.config.search.batch_size > 0 ? m.config.search.batch_size
                                                   : default_batch_size(evaluators_)),
        budget_(m.config.budget, job_end_time()),
        elapsed_before_(m.record.elapsed_seconds),
        bests_(m.config.kernels.size()),
        confirmation_sets_(m.config.kernels.size(), m.config.timing.confirm_top) {
    // While the search waits for the mutators, results are placed (not observed: the search is
    // in the middle of a proposal) and the evaluators get the work already queued.
    m_.search->set_while_waiting([this] {
      while (std::optional<Dispatcher::Finished> result = dispatcher_.poll())
        if (!result->abandoned) place(std::move(*result));
    });
  }
  ~SearchLoop() { m_.search->set_while_waiting({}); }
  SearchLoop(const SearchLoop&) = delete;
  SearchLoop& operator=(const SearchLoop&) = delete;

  // Runs it; the job's exit status comes from run_generations.
  void run() {
    next_generation_ = m_.record.generations;
    committed_ = m_.record.generations;
    for (std::vector<Planned>& batch : m_.restored_in_flight) enqueue(std::move(batch));
    m_.restored_in_flight.clear();
    last_commit_ = Clock::now();
    while (true) {
      const StopRequest stop = stop_requested();
      if (stop != StopRequest::none && !stopped_) {
        stopped_ = true;
        proposing_ = false;
        stop_reason_ = std::string("stopped by ") + stop_signal_name();
      }
      if (stop == StopRequest::abandon_generation) {
        if (!in_flight_.empty())
          stop_reason_ += "; the work in flight (generation(s) " +
                          std::to_string(in_flight_.front().number) + " to " +
                          std::to_string(in_flight_.back().number) +
                          ") was abandoned (a resume evaluates it again)";
        break;
      }
      bool more_wanted = false;
      if (proposing_) {
        more_wanted = propose_if_the_queue_is_low();
        if (!proposing_)
          log::info("the search stopped proposing: ", stop_reason_, "; ", in_flight_.size(),
                    " generation(s) in flight finish");
      }
      if (in_flight_.empty()) break;
      // One generation is proposed at a time, and the results already in are taken between
      // two: an evaluator that finished gets its next work now, not after the search's next
      // proposals (with candidates of 20 ms on two GPUs, a few proposals in a row left them
      // idle). Only when the queue is full does rank 0 wait for a result.
      std::optional<Dispatcher::Finished> result = dispatcher_.next(more_wanted ? 0.0 : 0.5);
      if (!result || result->abandoned) continue;  // a stop is taken at the top
      place(std::move(*result));
      while (!in_flight_.empty() && in_flight_.front().complete() &&
             stop_requested() != StopRequest::abandon_generation)
        commit_oldest();
    }
  }

  bool stopped() const { return stopped_; }
  void stop_during_confirmation() {
    stopped_ = true;
    stop_reason_ = std::string("stopped by ") + stop_signal_name() + " during the winner confirmation";
  }
  const std::string& stop_reason() const { return stop_reason_; }
  double elapsed() const { return elapsed_before_ + seconds_since(session_start_); }

 private:
  struct Generation {
    std::uint32_t number = 0;
    std::vector<Planned> batch;
    std::map<std::uint64_t, Dispatcher::Finished> results;
    bool complete() const { return results.size() == batch.size(); }
  };

  // Generations in flight that still wait for a result.
  std::size_t incomplete() const {
    return static_cast<std::size_t>(std::count_if(in_flight_.begin(), in_flight_.end(),
                                                  [](const Generation& g) { return !g.complete(); }));
  }

  std::size_t pending() const {
    std::size_t n = 0;
    for (const Generation& g : in_flight_) n += g.batch.size();
    return n;
  }

  // What the winner confirmation at the end will take, from the candidates committed so far:
  // the budget keeps it in reserve.
  double confirmation_reserve() {
    confirmation_sets_.take(m_.record);
    return confirmation_estimate(m_, confirmation_sets_);
  }

  // How many candidates should wait in the queue: one per evaluator, or as many as the
  // evaluators get through while the search makes its slowest recent proposal, whichever is
  // more. A proposal can take long (the mutators parse and compile a new parent: 0.3-0.9 s for
  // a CUDA kernel, against candidates of 50 ms on an H100), and the queue must outlast it.
  std::size_t queue_target() const {
    const double per_candidate = budget_.typical_candidate();
    if (recent_proposals_.empty() || per_candidate <= 0) return evaluators_;
    const double slowest = *std::max_element(recent_proposals_.begin(), recent_proposals_.end());
    const double covering = std::ceil(slowest / per_candidate);
    return std::max<std::size_t>(evaluators_, static_cast<std::size_t>(std::min(covering, 1e6)));
  }

  // Proposes a generation when fewer candidates wait than queue_target() (at most
  // kMostGenerationsInFlight generations waiting for results, kMostGenerationsUncommitted in
  // all), so that no evaluator waits for the search;
  // true when one was proposed and the queue may want another.
  bool propose_if_the_queue_is_low() {
    // Nothing is proposed before the originals (in the first generation) have run: a set-up in
    // which they fail stops the job, at the first generation's commit, before more is evaluated.
    auto originals_pending = [&] {
      if (m_.record.generations > 0 || in_flight_.empty()) return false;
      const Generation& first = in_flight_.front();
      for (const Planned& p : first.batch) {
        if (!run::is_original(p.record.level)) continue;
        auto done = first.results.find(p.record.id);
        if (done == first.results.end() || done->second.evaluation.outcome != replay::Outcome::ok)
          return true;
      }
      return false;
    };
    if (!proposing_ || waiting_for_commit_ || originals_pending() ||
        incomplete() >= kMostGenerationsInFlight ||
        in_flight_.size() >= kMostGenerationsUncommitted || dispatcher_.queued() >= queue_target())
      return false;
    const Stopwatch watch;
    const std::size_t evaluated = m_.record.candidates.size() + pending();
    const std::size_t count =
        evaluated < m_.config.budget.evaluations
            ? std::min<std::size_t>(batch_size_, m_.config.budget.evaluations - evaluated)
            : 0;
    // The confirmation at the end must fit too, and the candidates in flight before it.
    const std::string reason =
        budget_.stop_reason(evaluated, next_generation_, elapsed(), confirmation_reserve(),
                            now_epoch(), pending() + count);
    if (!reason.empty()) {
      proposing_ = false;
      stop_reason_ = reason;
      return false;
    }
    if (m_.llm) {
      for (const auto& answer : m_.llm->take()) {
        if (answer.status == evolve::ChatStatus::ok) latencies_.push_back(answer.seconds);
        m_.search->take_llm_answer(answer);
      }
    }
    std::vector<Planned> batch = m_.search->propose(next_generation_, count);
    if (batch.empty()) {
      // What is in flight may open more (a new source's levels): ask again after the next
      // commit. With nothing in flight, the search is done.
      add_search_time(watch, proposals_cpu_seconds_);
      if (!in_flight_.empty()) {
        waiting_for_commit_ = true;
        return false;
      }
      proposing_ = false;
      stop_reason_ = "the search has nothing left to propose";
      return false;
    }
    // Prompts for later generations go out now, to be answered while this one runs.
    if (m_.llm && !m_.llm->budget_exhausted()) {
      const std::size_t want = std::max<std::size_t>(
          1, static_cast<std::size_t>(std::ceil(batch_size_ * m_.config.search.source.share)));
      const std::size_t asked = m_.llm->outstanding();
      if (asked < 2 * want) m_.llm->submit(m_.search->llm_requests(2 * want - asked));
    }
    enqueue(std::move(batch));
    add_search_time(watch, proposals_cpu_seconds_);
    recent_proposals_.push_back(watch.wall());
    if (recent_proposals_.size() > kRecentProposals) recent_proposals_.pop_front();
    return true;
  }

  void enqueue(std::vector<Planned> batch) {
    if (batch.empty()) return;
    Generation g;
    g.number = batch.front().record.generation;
    log::info("generation ", g.number, ": evaluating ", batch.size(), " candidates (batch ",
              batch_digest(batch), ")");
    std::vector<protocol::WorkItem> items;
    for (const Planned& p : batch) {
      m_.record.sources.emplace(p.record.source, m_.search->sources().at(p.record.source));
      items.push_back({p.record.id, p.record.source, p.request});
      generation_of_[p.record.id] = g.number;
    }
    g.batch = std::move(batch);
    in_flight_.push_back(std::move(g));
    next_generation_ = std::max(next_generation_, in_flight_.back().number + 1);
    dispatcher_.add(items);
  }

  void place(Dispatcher::Finished result) {
    auto it = generation_of_.find(result.id);
    if (it == generation_of_.end() || in_flight_.empty() || it->second < in_flight_.front().number) {
      log::warning("a result for candidate ", result.id, ", which is not in flight; ignored");
      return;
    }
    Generation& g = in_flight_.at(it->second - in_flight_.front().number);
    generation_of_.erase(it);
    const std::uint64_t id = result.id;
    g.results.emplace(id, std::move(result));
  }

  // Observes the oldest generation, all of whose results are in, and commits it.
  void commit_oldest() {
    const Stopwatch watch;
    Generation& g = in_flight_.front();
    const std::size_t first = m_.record.candidates.size();
    for (Planned& p : g.batch) {
      run::CandidateRecord r = p.record;
      const Dispatcher::Finished& done = g.results.at(r.id);
      record_result(m_, r, &done.evaluation, done.evaluator);
      if (r.outcome != Outcome::ok)
        log::debug("candidate ", r.id, " (", to_string(r.level), ": ", r.description,
                   "): ", to_string(r.outcome), ": ", r.message.substr(0, 600));
      m_.search->observe(r);
      m_.record.candidates.push_back(std::move(r));
    }
    m_.search->end_generation();
    waiting_for_commit_ = false;
    m_.record.generations = g.number + 1;
    m_.record.search_state = m_.search->state();
    m_.record.elapsed_seconds = elapsed();
    for (std::size_t i = first; i < m_.record.candidates.size(); ++i)
      m_.record.candidates[i].run_seconds = m_.record.elapsed_seconds;
    // A commit adds only what the record gained to the database it keeps in memory
    // (run::DatabaseWriter), but still writes and syncs the whole file, which on a parallel
    // file system can take longer than a generation of a fraction of a second. It is written
    // for the first generations, and then once the time since the last write is 20 times what
    // that write took (at most 5% of rank 0's time), and kLeastWriteInterval: on the host demo
    // a write costs the searching thread 4-6 ms of CPU (HDF5 compressing the chunk each column
    // ends in, the sync), a quarter of its time per generation when it wrote every one of them.
    // A kill loses at most those generations, which a resume proposes and evaluates again
    // exactly; a signal or the end writes what is committed.
    double write_cpu = 0;
    if (g.number < 10 || in_flight_.size() == 1 ||
        seconds_since(last_write_) >= std::max(20 * last_write_seconds_, kLeastWriteInterval)) {
      const Stopwatch write;
      commit(m_, "generation " + std::to_string(g.number), committed_);
      committed_ = g.number + 1;
      last_write_ = Clock::now();
      last_write_seconds_ = write.wall();
      write_cpu = write.cpu();
    }
    const double interval = seconds_since(last_commit_);
    last_commit_ = Clock::now();
    budget_.add_generation(interval, g.batch.size());
    const double busy = dispatcher_.busy_seconds() - busy_at_last_commit_;
    busy_at_last_commit_ = dispatcher_.busy_seconds();
    add_search_time(watch, results_cpu_seconds_);
    results_cpu_seconds_ -= write_cpu;
    GenerationFigures figures;
    figures.generation = g.number;
    figures.first = first;
    figures.seconds = interval;
    figures.busy_fraction = interval > 0 ? busy / (static_cast<double>(evaluators_) * interval) : 0;
    figures.search_seconds = search_seconds_;
    figures.search_cpu_seconds = search_cpu_seconds_;
    figures.proposals_cpu_seconds = proposals_cpu_seconds_;
    figures.results_cpu_seconds = results_cpu_seconds_;
    figures.write_cpu_seconds = write_cpu;
    figures.in_flight = in_flight_.size() - 1;
    search_seconds_ = search_cpu_seconds_ = proposals_cpu_seconds_ = results_cpu_seconds_ = 0;
    bests_.take(m_.record);
    log::info(progress_line(m_, figures, bests_, latencies_));
    const std::uint32_t number = g.number;
    in_flight_.pop_front();
    // The originals run first: a set-up in which they fail would spend the budget on nothing.
    if (number == 0) refuse_broken_originals(m_, 0);
  }

  Master& m_;
  Dispatcher& dispatcher_;
  const std::size_t evaluators_;
  const std::size_t batch_size_;
  Budget budget_;
  const double elapsed_before_;
  KernelBests bests_;  // what the progress lines show
  ConfirmationSets confirmation_sets_;  // what the confirmation will re-measure, so far
  const Clock::time_point session_start_ = Clock::now();
  Clock::time_point last_commit_ = Clock::now();
  std::deque<Generation> in_flight_;
  static constexpr std::size_t kRecentProposals = 16;
  static constexpr double kLeastWriteInterval = 2.0;  // seconds between run.h5 writes, at least
  std::deque<double> recent_proposals_;  // the last proposals' times (queue_target)
  std::map<std::uint64_t, std::uint32_t> generation_of_;  // candidate in flight -> generation
  std::uint32_t next_generation_ = 0;
  bool proposing_ = true;
  bool waiting_for_commit_ = false;  // the last proposal found nothing until more is observed
  bool stopped_ = false;  // by a signal: no confirmation, a status of its own
  std::string stop_reason_;
  std::vector<double> latencies_;
  double busy_at_last_commit_ = 0;
  std::uint32_t committed_ = 0;  // generations run.h5 holds
  Clock::time_point last_write_ = Clock::now();
  double last_write_seconds_ = 0;
  double search_seconds_ = 0;      // rank 0's time since the last commit
  double search_cpu_seconds_ = 0;  // the CPU time of it, of which
  double proposals_cpu_seconds_ = 0, results_cpu_seconds_ = 0;  // proposing, taking results in
  void add_search_time(const Stopwatch& watch, double& part) {
    const double cpu = watch.cpu();
    search_seconds_ += watch.wall();
    search_cpu_seconds_ += cpu;
    part += cpu;
  }
};

int run_generations(Master& m, Dispatcher& dispatcher) {
  SearchLoop loop(m, dispatcher);
  loop.run();
  if (loop.stopped())
    log::warning(loop.stop_reason(), ": committing what was evaluated, without the winner confirmation");
  else if (!confirm_winners(m, dispatcher))
    loop.stop_during_confirmation();
  m.record.elapsed_seconds = loop.elapsed();
  log::info(m.search->describe_effort());
  m.record.search_state = m.search->state();
  commit(m, loop.stopped() ? "the stop" : "the winner confirmation", m.record.generations);
  report::ResultsFiles files;
  try {
    files = report::write_results(m.record, m.config.output.directory);
  } catch (const Error& e) {
    throw Error(e.message() + "; run.h5 is complete: once the directory can be written, 'r3 report " +
                    m.database.string() + " -o " + m.config.output.directory.string() +
                    "' writes the results",
                e.context());
  }
  log::info(final_summary(m, loop.stop_reason(), files, loop.stopped()));
  return loop.stopped() ? exit_stopped : exit_ok;
}

// Runs the generations; every evaluator learns how the job ended, whatever happens on rank 0.
int run_master(Master& m, const Collectives& world, const std::vector<std::size_t>& depths) {
  std::unique_ptr<Evaluator> local;
  int status = exit_ok;
  try {
    if (world.size() == 1)
      local = std::make_unique<Evaluator>(evaluator_setup(m), m.config.capture, 0,
                                          world.node_rank(), world.node_size());
    Dispatcher dispatcher(world, local.get(), m.record.sources,
                          local ? std::vector<std::size_t>{local->depth()} : depths);
    try {
      status = run_generations(m, dispatcher);
    } catch (...) {
      status = exit_status_of_current_exception();
    }
    dispatcher.stop(status);
  } catch (...) {
    status = exit_status_of_current_exception();
  }
  return status;
}

}  // namespace

void check_originals(const std::string& tune_file) {
  std::unique_ptr<Master> m = set_up_master(JobOptions{tune_file}, 1, /*dry_run=*/true);
  std::unique_ptr<Evaluator> local;
  try {
    local = std::make_unique<Evaluator>(evaluator_setup(*m), m->config.capture, 0, 0, 1);
  } catch (const std::exception& e) {
    std::cout << "# the originals were not compiled and run here: " << e.what() << "\n";
    return;
  }
  std::vector<Planned> originals = m->search->propose(0, 0);
  for (Planned& p : originals) {
    run::CandidateRecord& r = p.record;
    m->record.sources.emplace(r.source, m->search->sources().at(r.source));
    local->hold({{r.source, m->search->sources().at(r.source)}});
    const replay::Evaluation e = local->evaluate({r.id, r.source, p.request});
    record_result(*m, r, &e, 0);
    std::cout << "# " << m->config.kernels.at(r.kernel).name << ": " << to_string(r.level) << " ("
              << r.description << "): " << to_string(r.outcome);
    if (r.outcome == Outcome::ok) std::cout << ", " << format_ms(r.seconds);
    std::cout << "\n";
    m->record.candidates.push_back(r);
  }
  refuse_broken_originals(*m, 0);
  // Whether the source level will have rewrites of its own to search, before a budget is spent
  // finding out: a source the mutators cannot read as the build does gives them none.
  for (std::size_t k = 0; k < m->search->kernels().size(); ++k) {
    const std::optional<evolve::MutationReport> report = m->search->original_mutations(k);
    if (!report) continue;
    std::cout << "# " << m->config.kernels.at(k).name << ": the built-in mutators ";
    if (!report->mutations.empty()) {
      std::vector<std::pair<std::string, int>> made;  // by mutator, in the order first made
      for (const evolve::Mutation& mutation : report->mutations) {
        auto it = std::find_if(made.begin(), made.end(),
                               [&](const auto& entry) { return entry.first == mutation.mutator; });
        if (it == made.end()) it = made.insert(made.end(), {mutation.mutator, 0});
        ++it->second;
      }
      std::cout << "rewrite its source " << report->mutations.size() << " way(s):";
      for (const auto& [mutator, count] : made)
        std::cout << " " << mutator << (count > 1 ? " x" + std::to_string(count) : "");
      std::cout << "\n";
    } else if (!report->diagnostics.empty()) {
      std::cout << "cannot read its source with its defines, include_dirs and flags (-std=, -D, "
                   "-U, -I): "
                << first_diagnostic(report->diagnostics) << "\n";
    } else {
      std::cout << "find nothing to rewrite in its source\n";
    }
  }
}

int run_job(const JobOptions& options, const Collectives& world) {
  catch_stop_signals(/*second_ends_process=*/world.rank() == 0);
  std::unique_ptr<Master> master;
  int status = exit_ok;
  if (world.rank() == 0) {
    // Rank 0 is where evaluators' messages are redacted (Dispatcher).
    remember_secrets_from_environment(environ);
    try {
      master = set_up_master(options, world.size());
      if (const char* key = std::getenv(master->config.llm.api_key_env.c_str()))
        remember_secret(key);  // whatever the variable is called
    } catch (...) {
      status = exit_status_of_current_exception();
    }
  }
  status = std::stoi(world.broadcast(std::to_string(status)));
  if (status != exit_ok) return status;

  if (world.rank() != 0) {
    try {
      return run_evaluator(world);
    } catch (...) {
      // Past set-up, rank 0 decides; an evaluator that fails here can only end its own process.
      return exit_status_of_current_exception();
    }
  }
  try {
    std::vector<std::size_t> depths;
    if (world.size() > 1) {
      world.broadcast(protocol::encode(evaluator_setup(*master)));
      // Read here once, sent to every evaluator: no rank but this one reads the shared file.
      world.broadcast(read_text_file(master->config.capture, "capture",
                                     std::numeric_limits<std::uint64_t>::max()));
      std::vector<std::string> answers = world.gather(std::string());
      std::string first;
      for (std::size_t r = 1; r < answers.size(); ++r) {
        const protocol::Ready ready = protocol::decode_ready(answers[r]);
        depths.push_back(ready.depth);
        if (!ready.error.empty() && first.empty())
          first = "evaluator " + std::to_string(r) + ": " + ready.error;
      }
      world.broadcast(first.empty() ? "go" : "stop");
      if (!first.empty()) throw Error(first);
    }
    return run_master(*master, world, depths);
  } catch (...) {
    return exit_status_of_current_exception();
  }
}

}  // namespace r3::tune
