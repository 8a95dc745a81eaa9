// The messages between rank 0 and the evaluators, as typed values; text (JSON) only on the
// wire, with one encode and one decode each. Set-up goes by collective (the EvaluatorSetup, the
// capture's bytes); after it every message is point to point:
//
//   rank 0 -> evaluator   Work     candidates to evaluate, in order, with the source texts this
//                                  evaluator has not been sent yet
//                         Stop     end now, with the job's exit status
//   evaluator -> rank 0   Done     one candidate's evaluation, as soon as it is known
//                         Stopped  the last message: everything sent before it has arrived
//
// MPI keeps the order of the messages between two ranks, so a Stopped tells rank 0 that it has
// every Done of that evaluator.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "r3/hash.hpp"
#include "r3/replay/sandbox.hpp"

namespace r3::tune::protocol {

// What every evaluator needs to set up its sandbox (broadcast once).
struct EvaluatorSetup {
  std::string backend;
  std::vector<replay::KernelToPrepare> kernels;
  double timeout_s = 30;
  std::optional<std::uint32_t> compile_threads;  // timing.compile_threads; unset: automatic
  bool standby_sandbox = false;                  // timing.standby_sandbox
  std::filesystem::path capture;  // where rank 0 read it (used when it evaluates itself)
  std::string log_level;
  // What candidates may read as they compile: the kernels' include directories and the
  // directories of their sources (the sandbox child is held to these and the system's).
  std::vector<std::string> readable;
  std::string simulation;  // the simulate backend's cost model (tune.yaml's simulate:), as JSON
};

// An evaluator's answer to the set-up (gathered): why it cannot evaluate, or how many candidates
// it can hold at once (one running, one per compile thread compiling ahead, one more arriving).
struct Ready {
  std::string error;  // empty: ready
  std::size_t depth = 2;
};

// One candidate: its request without the source text, which goes by hash.
struct WorkItem {
  std::uint64_t id = 0;
  Hash128 source;
  replay::Request request;
};

struct Work {
  std::map<Hash128, std::string> sources;  // texts the evaluator was not sent before
  std::vector<WorkItem> items;
};

struct Done {
  std::uint64_t id = 0;
  replay::Evaluation evaluation;
  // The evaluator was told to stop (SIGTERM/SIGINT) before it ran the candidate: not a result.
  bool abandoned = false;
  std::size_t restarts = 0;  // of the evaluator's sandbox so far
};

struct Stop {
  int status = 0;
};

struct Stopped {};

using Message = std::variant<Work, Done, Stop, Stopped>;

std::string encode(const EvaluatorSetup& setup);
EvaluatorSetup decode_setup(std::string_view text);

std::string encode(const Ready& ready);
Ready decode_ready(std::string_view text);

std::string encode(const Message& message);
// Throws FormatError naming what is malformed.
Message decode(std::string_view text);

}  // namespace r3::tune::protocol
