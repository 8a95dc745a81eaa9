// Candidate host code runs in a process of its own, started afresh for every run: forked (by a
// keeper, itself forked from the process that compiled it) in a PID namespace of its own where
// the machine allows, sharing nothing with the compiling process but the replayed memory (shared
// mappings) and one control page. Before it runs a line of candidate code it closes every
// descriptor (no result channel, no capture, no log), ends with its keeper, and, when confined,
// takes on resource limits, no privileges and the allow-list system-call filter.
//
// Its own code (not yet the candidate's) restores the memory; the compiling process starts the
// run, times it to the candidate's "done", kills it and only then verifies: a candidate cannot
// write a result, cannot keep state from one timed run to the next (each run is a new process),
// cannot finish its work after it said it was done, and sees no process outside its namespace.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "r3/replay/backend.hpp"

namespace r3::replay {

struct CandidateCall {
  double seconds = 0;         // the candidate's CPU time from "go" to its "done"
  double before_seconds = 0;  // what `before` took
  std::string failure;  // how it ended when it did not return ("made a system call that ...")
  // The candidate's code returned (and its time is `seconds`).
  bool returned() const { return failure.empty(); }
};

// How a process ended, from its wait status ("killed by signal 11 (Segmentation fault)").
std::string describe_exit_status(int status);

class CandidateProcess {
 public:
  // `memory`: the shared mappings the candidate works on (populated in the new process before
  // it is timed, so that no run pays page faults another did not).
  explicit CandidateProcess(std::vector<std::span<std::byte>> memory);
  ~CandidateProcess();
  CandidateProcess(const CandidateProcess&) = delete;
  CandidateProcess& operator=(const CandidateProcess&) = delete;

  void set_limits(const CandidateLimits& limits) { limits_ = limits; }
  const CandidateLimits& limits() const { return limits_; }

  // Starts a process that runs `before` (r3's own code: it restores the memory, untimed), then,
  // when told, `candidate`, timed from here; the process is gone when this returns.
  CandidateCall run(const std::function<void()>& before, const std::function<void()>& candidate);

 private:
  struct Control;
  // The candidate process's side; `parent_cpu`: the core the parent forked it on.
  [[noreturn]] void serve(const std::function<void()>& before,
                          const std::function<void()>& candidate, int parent_cpu);
  // The keeper's side (the process between this one and the candidate process).
  [[noreturn]] void keep(const std::function<void()>& before,
                         const std::function<void()>& candidate, int parent_cpu);
  // "" once `state` is reached, else how the candidate process ended.
  std::string wait_for(pid_t keeper, unsigned state);
  // Releases the ended candidate process to its keeper, reaps the keeper and says how it ended.
  std::string describe_end(pid_t keeper);

  std::vector<std::span<std::byte>> memory_;
  CandidateLimits limits_;
  Control* control_ = nullptr;  // one shared page
  int statm_ = -1;              // /proc/self/statm, opened before any confinement
};

}  // namespace r3::replay
