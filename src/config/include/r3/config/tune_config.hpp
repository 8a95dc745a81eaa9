// tune.yaml: what to tune and how (docs/tune-yaml.md documents every key and its default).
// The layer above the libraries: its sections are the job's own (kernels, search levels,
// budget, timing, output) and the options the libraries own (replay::VerifyOptions,
// replay::SimulationOptions, evolve::LlmOptions, evolve::ArchiveOptions, bo::Options), which it
// maps tune.yaml's keys onto. Parsing fills these structs; every key left out keeps the default
// written in them. Unknown keys, wrong types and out-of-range values are ConfigErrors naming the
// file, line and key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "r3/bo/optimizer.hpp"
#include "r3/capture.hpp"
#include "r3/evolve/options.hpp"
#include "r3/replay/options.hpp"
#include "r3/replay/simulation.hpp"

namespace r3::config {

// `simulate`: candidates cost what a cost model says (replay::SimulationOptions) instead of
// running; the search is the one the capture's own backend would get.
enum class Backend { automatic, host, cuda, simulate };
std::string_view to_string(Backend value);

using replay::Compiler;

// Compiler switches the compiler level knows; tune.yaml may only list these.
inline const std::vector<std::string> kKnownCompilerFlags = {
    "fast_math", "ftz", "prec_div", "prec_sqrt", "fmad", "extra_device_vectorization"};

struct KernelSelection {
  std::string name;                   // kernel in the capture (name, demangled name, label, #index)
  std::filesystem::path source;       // its source file, absolute; empty: no source level
  std::string entry;                  // function in `source`; empty: the kernel's base name
  std::vector<std::size_t> launches;  // recorded launches to verify and time; empty: all
  std::map<std::string, std::string> defines;       // -D NAME=VALUE for every compile
  std::vector<std::filesystem::path> include_dirs;  // absolute
  std::vector<std::string> flags;                   // extra compiler flags for every compile
  // The pipeline every compile uses unless the compiler level searches it; empty:
  // search.compiler.passes.baseline. A result's tune.yaml fragment sets it.
  std::string passes;
  std::vector<std::uint32_t> block;  // launch with this block shape (x, y, z); empty: as recorded
  // A block that names R3_TUNABLEs ([TILE, TILE, 1]; integers, names, + - * / and parentheses):
  // the sources that declare them are launched with the block their values give, the grid
  // derived from the recorded work. Empty unless `block` names something.
  std::vector<std::string> block_expressions;
  // grid: recorded — with a new block, launch the recorded grid (blocks that each do one item)
  // instead of deriving one that keeps the recorded thread count (grid: derive, the default).
  bool keep_grid = false;
};

struct SourceLevel {
  bool enabled = true;
  double share = 0.25;
  std::vector<std::string> mutators = evolve::kMutatorNames;
};

struct PassSearch {
  std::vector<std::string> pool = {"instcombine", "simplifycfg",    "sroa",           "early-cse",
                                   "gvn",         "licm",           "loop-rotate",    "indvars",
                                   "loop-unroll", "loop-vectorize", "slp-vectorizer", "reassociate",
                                   "sccp",        "adce",           "jump-threading", "loop-idiom"};
  std::uint32_t max_length = 8;
  bool repeat = true;                    // may a pass appear more than once
  std::string baseline = "default<O3>";  // the pipeline candidates are compared with
};

struct CompilerLevel {
  bool enabled = true;
  double share = 0.25;
  std::vector<Compiler> compilers = {Compiler::nvrtc, Compiler::clang};
  std::vector<std::string> flags = kKnownCompilerFlags;  // on/off switches the search may set
  std::vector<int> opt_levels = {1, 2, 3};
  std::vector<int> max_registers = {0, 32, 64, 128, 255};  // 0: no limit
  PassSearch passes;
};

struct LaunchLevel {
  bool enabled = true;
  double share = 0.25;
  std::vector<std::uint32_t> block_x = {32, 64, 128, 256, 512, 1024};
  std::vector<std::uint32_t> block_y = {1, 2, 4, 8, 16, 32};
  std::vector<std::uint32_t> block_z = {1};
  std::uint32_t max_threads = 1024;
  // "derive": keep the total thread count per dimension; anything else is an expression over
  // bx, by, bz and the recorded grid/block (gx, gy, gz, rbx, rby, rbz), e.g. "ceil(4096 / bx)".
  std::string grid = "derive";
};

struct ParameterLevel {
  bool enabled = true;
  double share = 0.25;
};

struct SearchConfig {
  std::uint64_t seed = 1;
  std::uint32_t batch_size = 0;  // candidates per generation; 0: 8 per evaluator, at most 256 (at least 2 per evaluator)
  SourceLevel source;
  CompilerLevel compiler;
  LaunchLevel launch;
  ParameterLevel parameters;
  evolve::ArchiveOptions archive;
  // search.bo's keys (declared in tune_keys.cpp, listed in docs/tune-yaml.md) set its members;
  // the search gives each source and level its own seed and the job's fit pool.
  bo::Options bo;
};

struct BudgetConfig {
  std::uint64_t evaluations = 1000;
  std::uint32_t generations = 100;
  double wall_time_s = 3600;      // the whole run
  double llm_cost = 0;            // currency units; 0: no limit
  double job_end_margin_s = 300;  // stop this long before the batch job's end time
};

struct TimingConfig {
  std::uint32_t warmup = 2;
  std::uint32_t repeats = 10;
  bool flush_l2 = false;
  double candidate_timeout_s = 30;
  // Threads per evaluator compiling its next candidates while one runs; unset: automatic (the
  // node's cores shared among its evaluators, at most 8, for GPU backends; none for the host
  // backend, whose timed runs would compete with the compiles for the cores).
  std::optional<std::uint32_t> compile_threads;
  // GPU backends: after a candidate lost its sandbox child's GPU context, a second child is
  // kept prepared, so that the next loss (or a timeout's kill) costs no wait for a new one. Off
  // by default: while it prepares (2-2.5 s after each loss) it shares the GPU with candidates
  // being timed, which was not measured for its reference runs.
  bool standby_sandbox = false;
  std::uint32_t confirm_top = 3;  // best candidates re-measured before one is declared best
  std::uint32_t confirm_repeats = 50;
  std::uint32_t confirm_rounds = 3;  // interleaved rounds per evaluator
};

struct OutputConfig {
  std::filesystem::path directory;     // absolute; default <tune.yaml dir>/r3-results
  std::filesystem::path run_database;  // absolute; default <directory>/run.h5
};

struct Location {
  int line = 0;    // 1-based
  int column = 0;  // 1-based
};

struct TuneConfig {
  std::filesystem::path file;  // the tune.yaml, absolute
  std::string text;            // its content, kept for the run database
  std::filesystem::path capture;
  Backend backend = Backend::automatic;
  std::vector<KernelSelection> kernels;
  SearchConfig search;
  BudgetConfig budget;
  evolve::LlmOptions llm;
  replay::VerifyOptions verify;
  TimingConfig timing;
  OutputConfig output;
  replay::SimulationOptions simulate;  // with backend: simulate, what a candidate costs

  // Where each key was written ("kernels[0].name" -> line, column), for later errors.
  std::map<std::string, Location> locations;
  // A ConfigError pointing at `key` (or at the file when the key was not written).
  [[noreturn]] void fail(std::string_view key, std::string message) const;
};

TuneConfig load_tune_config(const std::filesystem::path& file);
// Parses `text` as if read from `file` (which relative paths and messages refer to).
TuneConfig parse_tune_config(std::string_view text, const std::filesystem::path& file);

// Checks a parsed tune.yaml against its capture and this build: every kernel is in the capture,
// launch indices exist, source files and include directories exist, the backend can replay the
// capture. Returns the backend whose search the job runs: the capture's (never `automatic` or
// `simulate`; with `simulate` candidates are then only simulated). Errors point at the tune.yaml
// key.
Backend check_against_capture(const TuneConfig& config, const capture::CaptureReader& capture);

// The resolved configuration as YAML: every key with its value, defaults included, absolute paths.
std::string to_yaml(const TuneConfig& config);

// One key tune.yaml accepts, as declared: what `r3-mpi --keys` prints and docs/tune-yaml.md's
// tables must show.
struct KeyDescription {
  std::string key;            // dotted: "search.levels.launch.block_x", "kernels[].name"
  std::string type;           // "integer 1..64", "number in [0, 1]", "`sobol`, `latin_hypercube`"
  std::string default_value;  // as written back ("`[1, 2, 3]`"), or in words ("required")
  std::string doc;            // one line
};
// Every key, in the order the resolved configuration writes them.
std::vector<KeyDescription> describe_keys();

}  // namespace r3::config
