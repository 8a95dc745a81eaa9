// Rank 0's side of the flow of work: one queue of candidates, handed to whichever evaluator has
// room as soon as it has room (at most `depth` each: one running, the next ones compiling), and
// their results as they come back. No evaluator has a fixed share: a slow candidate holds only
// the evaluator that runs it (and what that evaluator was already given).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
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

  int evaluators() const { return static_cast<int>(outstanding_.size()); }
  // Adds candidates to the shared queue, behind those already there.
  void add(const std::vector<protocol::WorkItem>& items);
  // Every evaluator runs all of `items`, in order (the winner confirmation).
  void add_to_every_evaluator(const std::vector<protocol::WorkItem>& items);
  // Hands out work to evaluators with room, then returns the next result, waiting at most
  // `timeout_s` for one; nullopt when none came.
  std::optional<Finished> next(double timeout_s);
  // What next(0) gives, but never an evaluation on this process's own evaluator (which would
  // run it now): for rank 0 to hand out work and take results while it waits for something else.
  std::optional<Finished> poll() { return local_ ? std::nullopt : next(0.0); }

  std::size_t queued() const;       // not handed out yet
  std::size_t outstanding() const;  // handed out, no result yet
  double busy_seconds() const { return busy_seconds_; }  // evaluations' time so far, summed

  // Tells every evaluator to end with `status` and takes what they still send until each has
  // said it stopped (so that no message is left unreceived when MPI ends). Once only.
  void stop(int status);

 private:
  void hand_out();
  Finished finished(std::uint64_t id, replay::Evaluation evaluation, int evaluator, bool abandoned);

  const Collectives& world_;
  Evaluator* local_;
  const std::map<Hash128, std::string>& sources_;
  std::vector<std::size_t> depths_;
  std::deque<protocol::WorkItem> shared_;
  // Per evaluator (index 0 is rank 1, or the local evaluator): its own queue, what it holds.
  std::vector<std::deque<protocol::WorkItem>> own_;
  std::vector<std::size_t> outstanding_;
  std::vector<std::set<Hash128>> sent_sources_;
  double busy_seconds_ = 0;
  bool stopped_ = false;
};

}  // namespace r3::tune
