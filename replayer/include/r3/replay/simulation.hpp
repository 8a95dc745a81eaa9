// The simulate backend: candidates that cost time and end as a cost model says, without a GPU,
// a compiler or the capture's memory. It lets r3-mpi run with 16 to 256 ranks on one small
// machine (evaluators mostly sleeping), so that what limits rank 0 and the flow of work can be
// measured (bench/tune_scaling --simulate). It drives the same job, sandbox and search as the
// real backends; only compile() and run() are made up.
//
// Every number a candidate gets is drawn from its variant's key: the same candidate always
// costs the same and ends the same way, on any evaluator, in any order.
#pragma once

#include <string>
#include <string_view>

namespace r3::replay {

struct SimulationOptions {
  double compile_s = 0.5;  // mean compile time of a candidate
  double run_s = 1.0;      // mean time of its runs (restore, warm-up, timed runs, verification)
  double spread = 0.3;     // each time is its mean x (1 +- spread), uniformly
  // Candidates that fail (half as compile errors, half as wrong results). A variant that
  // changes nothing of the kernel's build (no flags, defines, block or pass pipeline beyond a
  // default<On>) never fails: it is the application's code, which the job requires to run.
  double failure_rate = 0.05;
  double kernel_s = 1e-3;  // the kernel's time as recorded; candidates take 0.5x to 1.5x of it
  // Candidates that lose their process's GPU context (a launch error, as an illegal address is
  // on CUDA): the candidate costs `lost_s`, and the sandbox replaces its child, which takes
  // `prepare_s` to start (as every child does: an H100 prepares the demo's capture again in
  // 1.3-2.5 s; the old context's teardown, about 0.1 s, overlaps it). A standby child
  // (timing.standby_sandbox, off by default) takes over without that wait.
  double lost_rate = 0;
  double lost_s = 2.7;
  double prepare_s = 0;  // a new child's start, before its first candidate
};

std::string encode(const SimulationOptions& options);
// Throws FormatError naming the malformed field.
SimulationOptions decode_simulation(std::string_view text);

}  // namespace r3::replay
