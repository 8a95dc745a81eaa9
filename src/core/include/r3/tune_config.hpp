// tune.yaml: what to tune and how (docs/tune-yaml.md documents every key and its default).
// Parsing fills these structs; every key left out keeps the default written here. Unknown keys,
// wrong types and out-of-range values are ConfigErrors naming the file, line and key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "r3/capture.hpp"

namespace r3::config {

// `simulate`: candidates cost what a cost model says (SimulationConfig) instead of running; the
// search is the one the capture's own backend would get.
enum class Backend { automatic, host, cuda, simulate };
enum class Compiler { nvrtc, clang, recorded };
enum class Acquisition { log_ei, ucb };
enum class BatchStrategy { kriging_believer, local_penalization };
enum class InitialDesign { sobol, latin_hypercube };

std::string_view to_string(Backend value);
std::string_view to_string(Compiler value);
// "nvrtc", "clang" or "recorded"; nullopt for anything else.
std::optional<Compiler> parse_compiler(std::string_view text);
std::string_view to_string(Acquisition value);
std::string_view to_string(BatchStrategy value);
std::string_view to_string(InitialDesign value);

// Names the search knows; tune.yaml may only list these.
inline const std::vector<std::string> kKnownMutators = {
    "restrict", "unroll", "launch_bounds", "ldg", "hoist_loads", "parametrise"};
inline const std::vector<std::string> kKnownCompilerFlags = {
    "fast_math", "ftz", "prec_div", "prec_sqrt", "fmad", "extra_device_vectorization"};
inline const std::vector<std::string> kKnownDescriptors = {"registers", "shared_memory",
                                                           "code_size", "spills", "occupancy"};

struct Tolerance {
  bool bitwise = true;  // when false: |x - ref| <= atol + rtol * |ref|
  double rtol = 0;
  double atol = 0;
  static Tolerance exact() { return Tolerance{}; }
  static Tolerance relative(double rtol, double atol) { return Tolerance{false, rtol, atol}; }
  friend bool operator==(const Tolerance&, const Tolerance&) = default;
};

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
  std::vector<std::string> mutators = kKnownMutators;
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

struct ArchiveConfig {
  std::uint32_t islands = 4;
  std::uint32_t migration_interval = 5;  // generations
  std::vector<std::string> descriptors = {"registers", "shared_memory", "code_size"};
  std::uint32_t bins = 4;              // per descriptor
  double exploration = 0.2;            // share of parents drawn outside the elites
  double similarity_threshold = 0.95;  // near-duplicate sources above this are dropped
};

struct BoConfig {
  InitialDesign initial_design = InitialDesign::sobol;
  std::uint32_t initial_samples = 8;
  Acquisition acquisition = Acquisition::log_ei;
  double ucb_beta = 2.0;
  BatchStrategy batch = BatchStrategy::kriging_believer;
};

struct SearchConfig {
  std::uint64_t seed = 1;
  std::uint32_t batch_size = 0;  // candidates per generation; 0: twice the evaluator count
  SourceLevel source;
  CompilerLevel compiler;
  LaunchLevel launch;
  ParameterLevel parameters;
  ArchiveConfig archive;
  BoConfig bo;
};

struct BudgetConfig {
  std::uint64_t evaluations = 1000;
  std::uint32_t generations = 100;
  double wall_time_s = 3600;      // the whole run
  double llm_cost = 0;            // currency units; 0: no limit
  double job_end_margin_s = 300;  // stop this long before the batch job's end time
};

struct LlmConfig {
  std::string endpoint;  // base URL (".../v1"); empty: built-in mutators only
  std::string model;
  std::string api_key_env = "OPENAI_API_KEY";  // NAME of the variable holding the key
  double temperature = 0.7;
  std::uint32_t max_tokens = 4096;
  std::uint64_t max_answer_bytes = std::uint64_t{1} << 20;  // a longer HTTP answer is refused
  double timeout_s = 120;
  std::uint32_t concurrency = 4;
  std::uint32_t max_retries = 5;
  double prompt_cost_per_mtok = 0;      // per million prompt tokens
  double completion_cost_per_mtok = 0;  // per million completion tokens
  std::filesystem::path templates;      // directory overriding the built-in prompt templates
  std::filesystem::path
      ca_bundle;  // PEM certificates to verify the endpoint with (default: the system's)
  bool enabled() const { return !endpoint.empty(); }
};

struct VerifyConfig {
  std::map<capture::ElementType, Tolerance> types = default_type_tolerances();
  std::map<std::string, Tolerance> regions;  // by region name; wins over types
  bool after_timing = true;                  // verify again after the timed runs
  // Element types of regions the capture records as unknown, by region name: the tuning job
  // learns them from the kernel's source (a pointer to a struct of floats).
  std::map<std::string, capture::ElementType> region_types;
  Tolerance for_region(std::string_view name, capture::ElementType type) const;
  // The type a region is compared as: as recorded, else as region_types says.
  capture::ElementType type_of(std::string_view name, capture::ElementType recorded) const;
  static std::map<capture::ElementType, Tolerance> default_type_tolerances();
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
  std::uint32_t confirm_top = 3;  // best candidates re-measured before one is declared best
  std::uint32_t confirm_repeats = 50;
  std::uint32_t confirm_rounds = 3;  // interleaved rounds per evaluator
};

struct OutputConfig {
  std::filesystem::path directory;     // absolute; default <tune.yaml dir>/r3-results
  std::filesystem::path run_database;  // absolute; default <directory>/run.h5
};

// backend: simulate — what a candidate costs (replay::SimulationOptions says how it is used).
struct SimulationConfig {
  double compile_s = 0.5;  // mean compile time
  double run_s = 1.0;      // mean time of a candidate's runs
  double spread = 0.3;     // each time is its mean x (1 +- spread)
  double failure_rate = 0.05;
  double kernel_s = 1e-3;  // the recorded kernel's time
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
  LlmConfig llm;
  VerifyConfig verify;
  TimingConfig timing;
  OutputConfig output;
  SimulationConfig simulate;

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

// "90", "90s", "1.5m", "2h", "1h30m", "250ms" -> seconds; nullopt for anything else, and for
// more than 1e9 s. format_duration writes what parse_duration reads back exactly.
std::optional<double> parse_duration(std::string_view text);
std::string format_duration(double seconds);

}  // namespace r3::config
