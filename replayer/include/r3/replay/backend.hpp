// Replay (docs/architecture.md): run recorded kernel launches again, alone, as variants —
// compiled anew, placed at the recorded addresses or relocated, verified against what the
// original launch left, and timed. One interface for every backend (host, cuda).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "r3/capture.hpp"
#include "r3/hash.hpp"
#include "r3/outcome.hpp"
#include "r3/replay/options.hpp"

namespace r3::replay {

// How a candidate ended (r3/outcome.hpp): the same enum all the way to the run database.
using Outcome = r3::Outcome;
using r3::to_string;

enum class AddressMode {
  same_address,  // every region lies at the address it had when recorded
  relocated,     // some could not; pointers to them (in arguments and memory) were rewritten
};
std::string_view to_string(AddressMode mode);

// What to run instead of the recorded code.
struct Variant {
  std::string source_name;  // for diagnostics ("stencil.cpp")
  std::string source_text;  // empty: the code recorded in the capture
  std::string entry;        // kernel function in the source; empty: the recorded kernel's name
  std::map<std::string, std::string> defines;
  std::vector<std::filesystem::path> include_dirs;
  std::vector<std::string> flags;  // compiler flags
  std::string passes;              // LLVM pass pipeline; empty: the compiler's default
  replay::Compiler compiler = replay::Compiler::clang;
  std::optional<capture::Dim3> block;  // a new block shape (GPU backends)
  // With a new block: launch the recorded grid instead of deriving one that covers the recorded
  // threads (kernels that give each block one item of work, whatever its size).
  bool keep_grid = false;

  // Names the variant; a backend adds what it compiles for (CPU, GPU architecture) to make the
  // key its compiled code is cached under.
  Hash128 key() const;
};

struct Resources {
  int registers = -1;  // per thread, where the backend knows it
  int spilled_bytes = -1;
  int shared_bytes = -1;
  int max_threads_per_block = -1;  // the function's (its registers, launch bounds)
  std::uint64_t code_bytes = 0;
};

struct Compiled {
  bool ok = false;
  std::string diagnostics;  // compiler messages with line numbers, or why it failed
  Resources resources;
  double seconds = 0;  // compile time (0 when it came from the cache)
  bool from_cache = false;
  Hash128 key;
  std::shared_ptr<const void> code;  // the backend's handle to the loaded code
};

// A variant's code made from its source, before it is loaded: what a compile worker process
// sends back (r3/replay/compile_pool.hpp). NVRTC serialises the compiles of one process, so
// compiles ahead run in processes of their own.
struct Translation {
  bool ok = false;
  std::string diagnostics;
  std::string bytes;      // a cubin, or PTX when `ptx`
  bool ptx = false;       // for the driver's JIT
  std::string function;   // the kernel's name in the code
  double seconds = 0;
};

// Verification of one region after a launch.
struct RegionCheck {
  std::string name;
  std::uint64_t address = 0;  // as recorded
  std::uint64_t size = 0;
  capture::ElementType type = capture::ElementType::unknown;
  bool expected_to_change = false;  // the original launch changed it (it is in the epilogue)
  // Not a recorded region but mapped bytes next to one, which nothing may write: `name` is the
  // region they follow, mismatches the bytes written, first_bad_index the first one's offset.
  bool out_of_bounds = false;
  bool passed = true;
  std::uint64_t elements = 0;
  std::uint64_t mismatches = 0;  // elements outside tolerance
  // Where the region was expected to change: the elements the recorded launch changed, and of
  // those, the ones the candidate left as they were before it ran. A candidate that skips work
  // whose every update is below the tolerance (small increments to large values) passes the
  // tolerance but not this: more than 1% of the changed elements left alone fails.
  std::uint64_t changed = 0;
  std::uint64_t left_unchanged = 0;
  double max_error = 0;          // largest |value - expected| over all elements
  std::int64_t first_bad_index = -1;
  std::string tolerance;  // "bitwise" or "rtol=1e-05 atol=1e-08"
};

struct TimeStats {
  std::vector<double> samples;  // seconds, one per timed run
  double median = 0, min = 0, max = 0;
};

struct LaunchResult {
  std::size_t launch = 0;  // index among the kernel's recorded launches
  bool verified = false;
  std::vector<RegionCheck> regions;
  TimeStats time;
  double restore_seconds = 0;  // per run, outside the timed region
  double verify_seconds = 0;   // one verification
};

struct RunResult {
  Outcome outcome = Outcome::ok;
  std::string message;  // why, when not ok
  std::vector<LaunchResult> launches;
  double seconds = 0;  // the candidate's time: sum over launches of the median
};

struct RunOptions {
  std::uint32_t warmup = 2;
  std::uint32_t repeats = 10;
  bool verify_after_timing = true;
  bool flush_l2 = false;  // GPU backends: evict the L2 cache before every timed launch
  replay::VerifyOptions verify;
  // Send the candidate's compiled code back with its evaluation (Evaluation::code): the winner
  // confirmation asks for it, so that `r3 apply` loads what was confirmed.
  bool return_code = false;
};

// How a backend that runs candidate code on the host holds it (docs/security.md). Backends
// whose candidates run on a GPU ignore these.
struct CandidateLimits {
  bool confine = false;  // no privileges, the allow-list system-call filter, the limits below
  bool pid_namespace = false;  // each candidate process in a PID namespace of its own
  std::uint64_t memory_bytes = std::uint64_t{4} << 30;  // address space a candidate may add
  std::uint32_t cpu_seconds = 600;                      // a backstop: timeouts come first
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // Places the memory of the given recorded launches of a kernel (all when empty) and keeps
  // pristine copies of what they read. Throws r3::Error when the capture cannot be replayed.
  virtual void prepare(const capture::CaptureReader& capture, std::size_t kernel,
                       std::vector<std::size_t> launches) = 0;
  virtual AddressMode address_mode() const = 0;
  // A description of the placement, e.g. "same address (2 mappings, 2.0 MiB)".
  virtual std::string placement() const = 0;

  // Compiles a variant, or takes it from the cache. A variant that does not compile is a
  // result (ok = false, with diagnostics), not an exception. Safe to call from several threads
  // at once, and while run() runs on another (CompilePool compiles ahead that way).
  virtual Compiled compile(const Variant& variant) = 0;

  // Runs a compiled variant on every prepared launch: restore, run, verify, time.
  virtual RunResult run(const Compiled& compiled, const RunOptions& options) = 0;

  // True once an error left the device unusable for the rest of this process (a sticky CUDA
  // error): nothing more runs here, and the sandbox replaces its child process.
  virtual bool lost() const { return false; }
  // After how many evaluations the process holding this backend is best replaced by a fresh
  // one (0: never). The sandbox asks its child once, when it starts.
  virtual std::size_t evaluations_per_process() const { return 0; }

  // Candidate code from now on runs held by these (the sandbox sets them once confined).
  virtual void set_candidate_limits(const CandidateLimits&) {}

  // Where this backend's compiler reads, beyond the system's directories and the kernel's
  // include path (its own resource directory): what a confined sandbox must still let it read.
  virtual std::vector<std::filesystem::path> compiler_reads() const { return {}; }

  // Compiling in two steps, the first in another process (translate()): what that process needs
  // to know of the prepared kernel (text; empty when this backend compiles only in process),
  // whether a variant has a source to translate, and compile() of a variant translated
  // elsewhere (the cache and the loading as compile() does them).
  virtual std::string translation_context() const { return {}; }

  // A compiled variant's code as another process would load it (r3 apply): the bytes, the
  // kernel's name in them, and the architecture they are for; nullopt where the backend has no
  // such image (host and simulate backends).
  struct LoadableCode {
    std::string bytes;  // a cubin
    std::string function;
    std::string architecture;  // "sm_90"
    std::string toolkit;       // the CUDA toolkit it was compiled with ("13.0")
  };
  virtual std::optional<LoadableCode> loadable_code(const Compiled&) const { return std::nullopt; }
  virtual bool translates(const Variant&) const { return false; }
  virtual Compiled compile_translated(const Variant& variant, Translation) {
    return compile(variant);
  }
};

// A compile worker's side: translates `variant` for backend `backend` ("cuda") of the prepared
// kernel `context` describes. Needs no device. Throws Error for an unknown backend or context.
Translation translate(std::string_view backend, std::string_view context, const Variant& variant);

// "" when `passes` is an LLVM pass pipeline this build can run, else LLVM's message (builds
// without LLVM accept every pipeline: they have no backend that would run one).
std::string check_passes(std::string_view passes);

// The backend that replays captures recorded with `backend` ("host", "cuda"), or "simulate"
// (r3/replay/simulation.hpp), with its own settings in `options` (JSON; empty: its defaults).
// Throws NotAvailableError when this build of r3 lacks it.
std::unique_ptr<Backend> make_backend(std::string_view backend, std::string_view options = "");

}  // namespace r3::replay
