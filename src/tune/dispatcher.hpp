// Rank 0's side of the flow of work: one queue of candidates, handed to whichever evaluator has
// room as soon as it has room (at most `depth` each: one running, the next ones compiling), and
// their results as they come back. No evaluator has a fixed share: a slow candidate holds only
// the evaluator that runs it (and what that evaluator was already given).
//
// Where MPI allows it (Collectives::serves_from_any_thread), a thread of its own, the courier,
// does all of rank 0's talking to the evaluators: it hands out queued work the moment an
// evaluator has room and takes results as they come, while the search thread proposes, observes
// or writes run.h5 (any of which can take longer than an evaluator's queued work lasts). The
// search thread then only adds work and takes results. Without it, the search thread serves the
// evaluators in next(), between its own steps.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "evaluator.hpp"
#include "protocol.hpp"
#include "r3/tune/collectives.hpp"

namespace r3::tune {

class Dispatcher {
 public:
  struct Finished {
    std::uint64_t id = 0;
    replay::Evaluation evaluation;  // its messages with every known secret redacted
    int evaluator = 0;              // the rank that ran it
    bool abandoned = false;         // the evaluator was stopping: not a result
  };

  // `local`: the evaluator of a job of one process (rank 0 runs every candidate itself).
  // `sources`: the texts work items name by hash (sent to each evaluator once). `depths`: how
  // many candidates each evaluator holds at once (protocol::Ready); with `local`, one entry.
  Dispatcher(const Collectives& world, Evaluator* local,
             const std::map<Hash128, std::string>& sources, std::vector<std::size_t> depths);
  ~Dispatcher();  // ends the courier (stop() is what tells the evaluators)
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  int evaluators() const { return static_cast<int>(outstanding_.size()); }
  // Adds candidates to the shared queue, behind those already there.
  void add(const std::vector<protocol::WorkItem>& items);
  // Every evaluator runs all of `items`, in order (the winner confirmation).
  void add_to_every_evaluator(const std::vector<protocol::WorkItem>& items);
  // The next result, waiting at most `timeout_s` for one (work goes out to evaluators with room
  // meanwhile); nullopt when none came. Rethrows what stopped the courier (an MPI failure).
  std::optional<Finished> next(double timeout_s);
  // What next(0) gives, but never an evaluation on this process's own evaluator (which would
  // run it now): for rank 0 to hand out work and take results while it waits for something else.
  std::optional<Finished> poll() { return local_ ? std::nullopt : next(0.0); }

  std::size_t queued() const;       // not handed out yet
  std::size_t outstanding() const;  // handed out, no result yet
  double busy_seconds() const;      // evaluations' time so far, summed

  // Tells every evaluator to end with `status` and takes what they still send until each has
  // said it stopped (so that no message is left unreceived when MPI ends). Once only.
  void stop(int status);

 private:
  using Outgoing = std::vector<std::pair<int, std::string>>;  // (rank, encoded Work)
  // What the evaluators with room get now, taken off the queues (mutex_ held).
  Outgoing work_to_hand_out();
  void send(Outgoing messages);
  // One step of serving the evaluators: work out, the next message in (waiting at most
  // `timeout_s`), work out again. The courier's loop, or next()'s step without a courier.
  void serve(double timeout_s);
  void courier();
  void stop_evaluators(int status);  // Stop to each, then wait for each one's Stopped
  std::optional<Finished> take_result();  // mutex_ held

  const Collectives& world_;
  Evaluator* local_;
  const std::map<Hash128, std::string>& sources_;
  // Lock order: mutex_ alone; nothing is sent or received while it is held.
  mutable std::mutex mutex_;  // guards what both threads touch: everything below but the thread
  std::condition_variable result_came_;
  std::vector<std::size_t> depths_;
  std::deque<protocol::WorkItem> shared_;
  // Per evaluator (index 0 is rank 1, or the local evaluator): its own queue, what it holds.
  std::vector<std::deque<protocol::WorkItem>> own_;
  std::vector<std::size_t> outstanding_;
  std::vector<std::set<Hash128>> sent_sources_;
  std::deque<Finished> results_;  // taken in by the courier, not yet by next()
  double busy_seconds_ = 0;
  std::exception_ptr courier_failed_;
  std::optional<int> stop_status_;  // stop() was called: the courier tells the evaluators
  bool quit_ = false;               // the destructor: the courier ends without telling them
  bool stopped_ = false;
  bool stop_sent_ = false;          // stop_evaluators() began (whichever thread ran it)
  std::thread courier_;             // last: started once everything above is made
};

}  // namespace r3::tune
