// The evaluation sandbox: candidates run in a child process (the r3-sandbox helper) that an
// evaluator spawns before it makes any CUDA call. A candidate that crashes, hangs, corrupts
// memory or leaves a sticky CUDA error fails alone: the child is killed or has died, the
// candidate is recorded as a crash or timeout, and a fresh child (capture reloaded) takes the
// next one.
//
// With the host backend the child compiles, verifies and times candidates but runs none of their
// code itself: every run is a process of its own (candidate_process.hpp) that holds no
// descriptor and, confined, may make only the system calls computing needs. The child confines
// itself too (namespaces, Landlock, no capabilities, a seccomp deny-list) before it compiles
// anything. docs/security.md lists the layers and what each one stops.
//
// Parent and child talk over two pipes in length-prefixed JSON messages (wire.hpp).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "r3/replay/backend.hpp"

namespace r3::replay {

struct KernelToPrepare {
  std::size_t kernel = 0;             // index in the capture
  std::vector<std::size_t> launches;  // empty: all
};

struct SandboxSetup {
  std::filesystem::path helper;   // the r3-sandbox program; empty: find_sandbox_helper()
  std::filesystem::path capture;  // read by the child, again after every restart
  std::string backend = "host";
  std::string backend_options;  // the backend's own settings (make_backend), JSON
  std::vector<KernelToPrepare> kernels;
  bool confine = true;    // the child's confinement layers (host backend only; docs/security.md)
  // What the child may still read once confined (Landlock), besides the system's directories:
  // the kernels' include directories and their sources' directories.
  std::vector<std::filesystem::path> readable;
  double timeout_s = 30;  // per candidate, compile and runs together
  int log_rank = -1;      // the child's log prefix (its evaluator's rank)
  int device = -1;        // GPU backends: the GPU (modulo those visible); -1: R3_CUDA_DEVICE or 0
  std::string log_level;  // the child's log level; empty: the parent's
  unsigned compile_threads = 0;  // threads compiling ahead (precompile()); 0: none
  // Once a child was lost (a sticky GPU error, a timeout's kill), a second one is started and
  // prepared in the background, and takes over at once from the next one lost: a new child
  // prepares the capture again (1.3-2.5 s for the demo's on an H100, 100-250 candidates' time),
  // which the evaluator otherwise waits for. It holds a second copy of the capture (on the GPU
  // for CUDA); one that cannot start is given up for the rest of the run.
  bool standby = false;
};

// What became of one candidate.
struct Evaluation {
  Outcome outcome = Outcome::ok;
  std::string message;  // why, when not ok (diagnostics, the first bad region, the signal)
  Resources resources;
  double compile_seconds = 0;
  bool from_cache = false;
  RunResult run;       // launches, verification and times, when it ran
  double seconds = 0;  // the whole evaluation as the parent saw it (spawn and compile included)
  bool process_lost = false;  // the candidate left the child's device unusable; it was replaced
  std::uint64_t sequence = 0;  // the request's, echoed: an answer out of turn is not believed
  // The code that ran, when the request asked for it (RunOptions::return_code), the candidate
  // verified and the backend has code another process can load (CUDA).
  std::optional<Backend::LoadableCode> code;
};

struct Request {
  std::size_t kernel = 0;  // index in SandboxSetup::kernels
  Variant variant;
  RunOptions options;
  std::uint64_t sequence = 0;  // set by the sandbox: its answer must carry the same number
};

class Sandbox {
 public:
  // Spawns the child and has it prepare every kernel. Throws r3::Error (with the child's
  // message) when the capture cannot be replayed at all: that is not a candidate's failure.
  explicit Sandbox(SandboxSetup setup);
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  // Runs one candidate. Its failures (compile error, crash, hang, wrong result, ...) are the
  // Evaluation's outcome; only a child that cannot be restarted throws. `while_running`, where
  // given, is called now and then while the child runs the candidate (after 1 ms, then at
  // doubling intervals of at most 32 ms) until it returns false, in this thread: the caller's
  // chance to take in its next work during the run rather than after it (precompile_if_room()
  // may be called from it). It must not throw.
  Evaluation evaluate(const Request& request, const std::function<bool()>& while_running = {});

  // Hands candidates that evaluate() will be asked for to the child's compile threads, so they
  // compile while earlier ones run (nothing happens without compile threads). Should the child
  // die while compiles run in the background, the candidate being evaluated is not blamed at
  // once: it runs again alone in a fresh child, and only a second death is its own.
  void precompile(const std::vector<Request>& requests);
  // precompile(), but only where the message fits in the pipe to the child at once; false (and
  // nothing sent, to be handed over again later) otherwise. For while_running: the child reads
  // nothing while it runs a candidate, so a parent that waited there for room could deadlock
  // with a child waiting for room for its answer.
  bool precompile_if_room(const std::vector<Request>& requests);

  // Children started again after one died or was killed (not those renewed: renewals()).
  std::size_t restarts() const { return restarts_; }
  // Lost children replaced by the standby (SandboxSetup::standby), without a wait.
  std::size_t standby_takeovers() const { return standby_takeovers_; }
  // Children replaced by a fresh one after renew_after() evaluations.
  std::size_t renewals() const { return renewals_; }
  // What the child's backends ask for (Backend::evaluations_per_process; 0: never renewed).
  std::size_t renew_after() const { return renew_after_; }
  const std::string& placement() const { return placement_; }
  bool confined() const { return confined_; }
  // The confinement layers the child could not put in place, with why (docs/security.md).
  const std::map<std::string, std::string>& missing_layers() const { return missing_layers_; }

 private:
  // A child process and its two pipes.
  struct Child {
    pid_t pid = -1;
    int to = -1;
    int from = -1;
  };
  Evaluation evaluate_once(const Request& request, const std::function<bool()>& while_running);
  // precompile() and precompile_if_room(): false only where the pipe had no room.
  bool hand_over(const std::vector<Request>& requests, bool only_if_room);
  void start();
  void start_again();  // after the child was lost (a restart) or stopped to be renewed
  // A new child, spawned and asked to prepare the capture; its answer is not read yet.
  Child spawn_child();
  // Waits for `child`'s answer to the preparation, and makes it the child. Throws r3::Error
  // (the child gone) when it could not prepare.
  void take_over(Child child);
  void replace_lost_child();  // a new child started while the one that lost its context ends
  // The standby takes the lost child's place (which ended `old_ended_s` after it was lost, when
  // that was measured), and a new standby is started. False when there was none ready (none
  // started yet, or it failed).
  bool bring_in_standby(const char* why, std::optional<double> old_ended_s);
  void start_standby();
  void stop();         // kills the child (if any) and reaps it
  std::string reap();  // waits for a child that died; how it ended ("killed by signal 11 ...")

  SandboxSetup setup_;
  pid_t child_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  Child standby_;             // started ahead (SandboxSetup::standby); its answer not yet read
  bool standby_given_up_ = false;
  std::size_t restarts_ = 0;
  std::size_t renewals_ = 0;
  std::size_t standby_takeovers_ = 0;
  std::size_t renew_after_ = 0;
  std::size_t evaluated_by_child_ = 0;
  bool renewing_ = false;       // the child was stopped to be renewed, not lost
  std::uint64_t sequence_ = 0;  // of the last request sent
  std::string placement_;
  bool confined_ = false;
  std::map<std::string, std::string> missing_layers_;
  bool compiling_ahead_ = false;  // the child has background compiles it was asked for
  bool child_died_ = false;       // the last evaluate_once() lost the child itself
  bool compiling_when_sent_ = false;  // compiling_ahead_ when its request went to the child
};

// The helper next to the running program (same directory, or ../libexec/r3), or $R3_SANDBOX.
// Throws NotAvailableError naming the places it looked.
std::filesystem::path find_sandbox_helper();

// The child's side: serves requests on `in_fd`, answers on `out_fd` until the parent closes
// the pipe. The body of r3-sandbox's main; returns its exit status.
int sandbox_child_main(int in_fd, int out_fd);

// Installs the sandbox child's system-call filter in the calling process. Returns "" when done,
// else why not (a build without libseccomp, or a kernel that refuses).
std::string confine_process();

// The environment a sandbox child is given: the variables the toolchain and the GPU runtime
// need (PATH, HOME, LANG/LC_*, TMPDIR, CUDA_*, NVIDIA_*, R3_*, LD_LIBRARY_PATH, ...) and never
// one whose name says it holds a secret (*KEY*, *TOKEN*, *SECRET*, *PASSWORD*, *CREDENTIAL*).
std::vector<std::string> sandbox_environment(char** environment);

}  // namespace r3::replay
