// The tuning job: set-up checked on rank 0, the capture broadcast, then one generation at a
// time — rank 0 proposes a batch and broadcasts it, evaluators run their share in sandboxes and
// gather the results back, rank 0 observes them and commits the generation to run.h5.
#include "r3/tune/job.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "budget.hpp"
#include "llm_worker.hpp"
#include "region_names.hpp"
#include "r3/capture.hpp"
#include "r3/error.hpp"
#include "r3/files.hpp"
#include "r3/exit_codes.hpp"
#include "r3/log.hpp"
#include "r3/secrets.hpp"
#include "r3/replay/extract_command.hpp"
#include "r3/replay/sandbox.hpp"
#include "r3/replay/wire.hpp"
#include "r3/report/analysis.hpp"
#include "r3/report/results.hpp"
#include "r3/database_lock.hpp"
#include "r3/run_database.hpp"
#include "r3/tune_config.hpp"
#include "r3/version.hpp"
#include "r3/evolve/response.hpp"
#include "search.hpp"
#include "stop_signals.hpp"

extern char** environ;

namespace r3::tune {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string read_file(const std::filesystem::path& path, std::string_view what,
                      std::uint64_t max_bytes = kMaxTextFileBytes) {
  return read_text_file(path, what, max_bytes);
}

std::string format_ms(double seconds) {
  std::ostringstream out;
  out.precision(seconds * 1e3 < 10 ? 3 : 4);
  out << seconds * 1e3 << " ms";
  return out.str();
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

// What every evaluator needs to set up its sandbox.
struct EvaluatorSetup {
  std::string backend;
  std::vector<replay::KernelToPrepare> kernels;
  double timeout_s = 30;
  std::optional<std::uint32_t> compile_threads;  // timing.compile_threads; unset: automatic
  bool has_capture_bytes = false;                // the capture follows as a second broadcast
  std::filesystem::path capture;  // where rank 0 read it (used when it evaluates itself)
  std::string log_level;
  // What candidates may read as they compile: the kernels' include directories and the
  // directories of their sources (the sandbox child is held to these and the system's).
  std::vector<std::string> readable;
};

std::string encode(const EvaluatorSetup& s) {
  json kernels = json::array();
  for (const auto& k : s.kernels)
    kernels.push_back({{"kernel", k.kernel}, {"launches", k.launches}});
  return json{{"backend", s.backend},
              {"kernels", kernels},
              {"timeout_s", s.timeout_s},
              {"has_capture_bytes", s.has_capture_bytes},
              {"compile_threads", s.compile_threads ? static_cast<int>(*s.compile_threads) : -1},
              {"capture", s.capture.string()},
              {"log_level", s.log_level},
              {"readable", s.readable}}
      .dump();
}

EvaluatorSetup decode_setup(const std::string& text) {
  json j = json::parse(text);
  EvaluatorSetup s;
  s.backend = j.at("backend").get<std::string>();
  for (const json& k : j.at("kernels"))
    s.kernels.push_back(
        {k.at("kernel").get<std::size_t>(), k.at("launches").get<std::vector<std::size_t>>()});
  s.timeout_s = j.at("timeout_s").get<double>();
  if (int threads = j.at("compile_threads").get<int>(); threads >= 0)
    s.compile_threads = static_cast<std::uint32_t>(threads);
  s.has_capture_bytes = j.at("has_capture_bytes").get<bool>();
  s.capture = j.at("capture").get<std::string>();
  s.log_level = j.at("log_level").get<std::string>();
  s.readable = j.at("readable").get<std::vector<std::string>>();
  return s;
}

// A private directory for an evaluator's copy of the capture, removed at exit. Its name carries
// the evaluator's pid, so that the copies of jobs that were killed are removed by the next
// evaluator that starts on the node (a large capture per evaluator fills node-local /tmp).
class ScratchDirectory {
 public:
  ScratchDirectory() {
    remove_dead_jobs_copies();
    std::string pattern = (std::filesystem::temp_directory_path() /
                           ("r3-evaluator-" + std::to_string(::getpid()) + "-XXXXXX"))
                              .string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw IoError("mkdtemp", pattern + ": " + std::strerror(errno));
    path_ = pattern;
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  // A zombie (killed, not yet reaped by whoever inherited it) is dead too.
  static bool process_alive(pid_t pid) {
    if (::kill(pid, 0) != 0) return errno != ESRCH;  // EPERM: someone else's, alive
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    std::size_t end = text.rfind(')');  // the command name may hold spaces and parentheses
    return end == std::string::npos || end + 2 >= text.size() || text[end + 2] != 'Z';
  }
  static void remove_dead_jobs_copies() {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), ec)) {
      const std::string name = entry.path().filename().string();
      const std::string prefix = "r3-evaluator-";
      if (!name.starts_with(prefix)) continue;
      long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
      struct stat info {};
      if (pid <= 0 || ::lstat(entry.path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
          info.st_uid != ::getuid())
        continue;
      if (process_alive(static_cast<pid_t>(pid))) continue;
      std::error_code ignored;
      std::filesystem::remove_all(entry.path(), ignored);
      if (!ignored) log::info("removed ", entry.path().string(), ", the scratch copy of a job that died");
    }
  }
  std::filesystem::path path_;
};

// timing.compile_threads, or what suits this process: for GPU backends the cores it may use (its
// CPU binding when Slurm or mpirun bound it, else the node's cores shared among the node's
// processes), at most 8; none for the host backend.
unsigned compile_threads(const EvaluatorSetup& setup, int node_size) {
  if (setup.compile_threads) return *setup.compile_threads;
  if (setup.backend == "host") return 0;
  const unsigned node_cores = std::max(1u, std::thread::hardware_concurrency());
  unsigned cores = node_cores / static_cast<unsigned>(std::max(1, node_size));
  cpu_set_t mask;
  if (::sched_getaffinity(0, sizeof mask, &mask) == 0) {
    const auto bound = static_cast<unsigned>(CPU_COUNT(&mask));
    if (bound < node_cores) cores = bound;
  }
  return std::clamp(cores, 1u, 8u);
}

// An evaluator: its sandbox, and the sources it has been sent.
class Evaluator {
 public:
  // `gpu`: which of the node's GPUs the sandbox uses (its node-local rank; the child takes it
  // modulo the GPUs it sees). `node_size`: the processes on this node, which share its cores.
  Evaluator(const EvaluatorSetup& setup, const std::filesystem::path& capture, int rank, int gpu,
            int node_size) {
    replay::SandboxSetup s;
    s.device = gpu;
    s.compile_threads = compile_threads(setup, node_size);
    s.capture = capture;
    s.backend = setup.backend;
    s.kernels = setup.kernels;
    s.confine = setup.backend == "host";
    s.readable.assign(setup.readable.begin(), setup.readable.end());
    s.timeout_s = setup.timeout_s;
    s.log_rank = rank;
    s.log_level = setup.log_level;
    sandbox_ = std::make_unique<replay::Sandbox>(std::move(s));
    rank_ = rank;
  }

  // Runs this evaluator's share of a batch (all of it when the batch says "everyone", as the
  // winner confirmation does); returns the results message.
  std::string evaluate(const json& batch, int share, int shares) {
    if (batch.value("everyone", false)) share = 0, shares = 1;
    for (const auto& [hex, text] : batch.at("sources").items())
      sources_[hex] = text.get<std::string>();
    json results = json::array();
    double busy = 0;
    const json& candidates = batch.at("candidates");
    struct Mine {
      const json* candidate;
      std::optional<replay::Request> request;
      std::string error;  // why it could not be read
    };
    std::vector<Mine> mine;
    std::vector<replay::Request> ahead;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (static_cast<int>(i % shares) != share) continue;
      Mine m{&candidates[i], std::nullopt, ""};
      try {
        replay::Request request = replay::wire::decode_request(m.candidate->at("request").dump());
        request.variant.source_text = sources_.at(m.candidate->at("source").get<std::string>());
        ahead.push_back(request);
        m.request = std::move(request);
      } catch (const std::exception& error) {
        m.error = error.what();
      }
      mine.push_back(std::move(m));
    }
    try {
      sandbox_->precompile(ahead);
    } catch (const std::exception& error) {
      log::warning("candidates are not compiled ahead: ", error.what());
    }
    for (const Mine& m : mine) {
      replay::Evaluation e;
      try {
        if (stop_requested() == StopRequest::abandon_generation)
          throw Error(std::string("abandoned: the evaluator was told to stop (") +
                      stop_signal_name() + ")");
        if (!m.request) throw FormatError(m.error);
        e = sandbox_->evaluate(*m.request);
      } catch (const std::exception& error) {
        // The sandbox could not be restarted, or the message was bad: this candidate fails,
        // the job goes on.
        e.outcome = replay::Outcome::crash;
        e.message = std::string("the evaluator could not run it: ") + error.what();
      }
      busy += e.seconds;
      results.push_back(
          {{"id", m.candidate->at("id")}, {"evaluation", json::parse(replay::wire::encode(e))}});
    }
    return json{
        {"rank", rank_}, {"busy", busy}, {"results", results}, {"restarts", sandbox_->restarts()}}
        .dump();
  }

 private:
  std::unique_ptr<replay::Sandbox> sandbox_;
  std::map<std::string, std::string> sources_;
  int rank_ = 0;
};

// Rank 0's state between set-up and the end of the run.
struct Master {
  std::unique_ptr<run::DatabaseLock> lock;  // held for the whole job
  config::TuneConfig config;
  config::Backend backend = config::Backend::host;
  std::unique_ptr<capture::CaptureReader> capture;
  std::unique_ptr<Search> search;
  std::unique_ptr<LlmWorker> llm;
  run::RunRecord record;
  std::filesystem::path database;
  std::set<Hash128> sent_sources;  // texts the evaluators of this session already hold
  // Per kernel, its parameters' names in its source (empty without one): regions named after
  // what reaches them ("arg2") are shown as the source names them ("C").
  std::vector<std::vector<std::string>> parameter_names;
};



// Pipelines LLVM cannot parse, and kernels' pipelines the search would replace, are errors:
// neither may be silently dropped.
void check_pass_pipelines(const config::TuneConfig& c, config::Backend backend) {
  const auto& compiler = c.search.compiler;
  // The compiler level takes its -O levels from the baseline (levels.cpp); with the host backend
  // it builds each candidate's whole pipeline itself.
  const bool level_on = compiler.enabled && compiler.share > 0;
  const bool searched = level_on && backend == config::Backend::host;
  if (std::string why = replay::check_passes(compiler.passes.baseline); !why.empty())
    c.fail("search.levels.compiler.passes.baseline", "'" + compiler.passes.baseline + "' is not a pass pipeline: " + why);
  if (level_on && !opt_level_of(compiler.passes.baseline))
    c.fail("search.levels.compiler.passes.baseline",
           "'" + compiler.passes.baseline +
               "': while the compiler level searches, the baseline must be default<O0> to "
               "default<O3> (the level varies the -O level and appends passes to it)");
  for (std::size_t i = 0; i < c.kernels.size(); ++i) {
    const std::string& passes = c.kernels[i].passes;
    if (passes.empty()) continue;
    const std::string key = "kernels[" + std::to_string(i) + "].passes";
    if (std::string why = replay::check_passes(passes); !why.empty())
      c.fail(key, "'" + passes + "' is not a pass pipeline: " + why);
    if (searched)
      c.fail(key, "cannot take effect: the compiler level (search.levels.compiler) chooses every "
                  "candidate's pipeline; set search.levels.compiler.enabled: false to compile with "
                  "this one, or start the search from it with search.levels.compiler.passes.baseline");
  }
}

// The first line of a compiler's or verifier's message that names an error, else its first line.
std::string first_diagnostic(const std::string& message) {
  std::istringstream lines(message);
  std::string line, first;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (first.empty()) first = line;
    if (line.find("error") != std::string::npos) return line;
  }
  return first.empty() ? std::string("(no message)") : first;
}

// An application's own file rather than a kernel file: host code around the kernels (launches,
// main). Such a file is not compiled as it is: the kernel's device-only unit is cut from it.
bool is_application_file(const std::string& text) {
  return text.find("<<<") != std::string::npos || text.find(" main(") != std::string::npos;
}

// kernels[index] as its source file knows it: read with Clang and the compile settings tune.yaml
// gives it (r3 extract shows the same unit).
std::string name_in_source(const config::KernelSelection& s, const capture::Kernel& kernel) {
  return !s.entry.empty()                 ? s.entry
         : kernel.demangled_name.empty() ? kernel.name
                                         : capture::instance_name(kernel.demangled_name);
}
replay::ExtractedSource read_with_clang(const config::TuneConfig& c, std::size_t index,
                                        const capture::Kernel& kernel) {
  const config::KernelSelection& s = c.kernels[index];
  // Only what changes how the file reads; code generation flags (--use_fast_math, -O3, NVRTC's
  // own) are for the unit's compile, and Clang refuses those it does not know.
  std::vector<std::string> reading;
  for (const std::string& flag : s.flags)
    if (flag.rfind("-std=", 0) == 0 || flag.rfind("-D", 0) == 0 || flag.rfind("-I", 0) == 0 ||
        flag.rfind("-U", 0) == 0)
      reading.push_back(flag);
  return replay::extract_source(s.source, name_in_source(s, kernel), s.defines, s.include_dirs,
                                reading);
}

// The device-only unit of kernels[index], cut from its source file, an application's file.
std::string extracted_unit(const config::TuneConfig& c, std::size_t index,
                           const capture::Kernel& kernel, const replay::ExtractedSource& unit) {
  const config::KernelSelection& s = c.kernels[index];
  const std::string name = name_in_source(s, kernel);
  const std::string key = "kernels[" + std::to_string(index) + "].source";
  if (!unit.ok)
    c.fail(key, "cannot cut kernel '" + name + "' from " + s.source.string() + ": " +
                    first_diagnostic(unit.diagnostics));
  log::info(key, ": the device-only unit of '", name, "' cut from ", s.source.filename().string(),
            " (", unit.pieces, " piece(s); 'r3 extract ", s.source.string(), " -k ", name,
            "' shows it)");
  return unit.text;
}

// Regions reached by a pointer to a struct of one floating type, which the capture cannot type:
// compared per component with that type's tolerance, as float2 is.
std::map<std::string, capture::ElementType> struct_region_types(
    const replay::ExtractedSource& unit, const capture::Kernel& kernel) {
  std::map<std::string, capture::ElementType> types;
  if (!unit.ok || unit.parameter_struct_types.size() != kernel.params.size()) return types;
  for (std::size_t i = 0; i < kernel.params.size(); ++i) {
    if (auto type = capture::parse_element_type(unit.parameter_struct_types[i]))
      types["arg" + std::to_string(i)] = *type;
  }
  return types;
}

std::unique_ptr<Master> set_up_master(const JobOptions& options, int world_size,
                                      bool dry_run = false) {
  auto m = std::make_unique<Master>();
  m->config = config::load_tune_config(options.tune_file);
  const config::TuneConfig& c = m->config;
  try {
    m->capture = std::make_unique<capture::CaptureReader>(capture::CaptureReader::open(c.capture));
  } catch (const Error& e) {
    c.fail("capture", e.what());
  }
  m->backend = config::check_against_capture(c, *m->capture);
  std::vector<KernelTarget> kernels;
  for (std::size_t i = 0; i < c.kernels.size(); ++i) {
    const config::KernelSelection& s = c.kernels[i];
    KernelTarget k;
    k.capture_index = m->capture->find_kernel(s.name).value();  // checked above
    const capture::Kernel& kernel = m->capture->kernels().at(k.capture_index);
    k.name = kernel.name;
    k.launches = s.launches;
    if (!s.source.empty()) {
      k.source = read_file(s.source, "kernels[" + std::to_string(i) + "].source");
      k.source_name = s.source.filename().string();
      if (m->backend == config::Backend::cuda) {
        const replay::ExtractedSource unit = read_with_clang(c, i, kernel);
        if (is_application_file(k.source)) k.source = extracted_unit(c, i, kernel, unit);
        k.region_types = struct_region_types(unit, kernel);
        for (const auto& [region, type] : k.region_types)
          log::info("kernels[", i, "]: region '", region, "' holds a struct of ",
                    capture::to_string(type), " only (from ", k.source_name,
                    "): compared per component");
      }
    }
    k.base.entry = s.entry;
    k.base.defines = s.defines;
    k.base.include_dirs = s.include_dirs;
    k.base.flags = s.flags;
    k.base.passes = s.passes;
    if (!s.block.empty()) k.base.block = capture::Dim3{s.block[0], s.block[1], s.block[2]};
    k.base.keep_grid = s.keep_grid;
    if (!s.block_expressions.empty()) {
      if (s.source.empty())
        c.fail("kernels[" + std::to_string(i) + "].block",
               "the block names tunables, which only a source: declares");
      k.block_expressions =
          evolve::BlockExpressions{s.block_expressions[0], s.block_expressions[1],
                                   s.block_expressions[2]};
    }
    k.original_block = k.base.block;
    if (!k.original_block && !kernel.launches.empty())
      k.original_block = kernel.launches.at(k.launches.empty() ? 0 : k.launches.front()).block;
    k.base.compiler =
        m->backend == config::Backend::cuda ? config::Compiler::nvrtc : config::Compiler::clang;
    k.has_recorded_cubin = kernel.images.contains(std::string(capture::kImageCubin));
    k.has_recorded_ptx = kernel.images.contains(std::string(capture::kImagePtx));
    k.has_recorded_source = kernel.images.contains(std::string(capture::kImageSource));
    // The kernel as its source names it: "MatrixMul" for _Z9MatrixMulILi32EEvPfS_.
    std::string base = kernel.demangled_name.empty() ? kernel.name
                                                     : capture::instance_name(kernel.demangled_name);
    k.template_arguments = capture::template_arguments(base);
    base = base.substr(0, base.find('<'));
    if (std::size_t scope = base.rfind("::"); scope != std::string::npos) base = base.substr(scope + 2);
    k.source_entry = base;
    // The parameters' names where the source is known: messages and tolerances use them.
    std::vector<std::string> names;
    if (!k.source.empty() && m->backend == config::Backend::cuda) {
      names = evolve::parameter_names(evolve::entry_signature(k.source, entry_in_source(k)));
      if (names.size() != kernel.params.size()) names.clear();
    }
    m->parameter_names.push_back(names);
    kernels.push_back(std::move(k));
  }
  // verify.regions may name a region as the source does ("C" for arg2): each such tolerance
  // also holds for the recorded name.
  for (const auto& names : m->parameter_names) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      auto& regions = m->config.verify.regions;
      if (auto it = regions.find(names[i]); it != regions.end() && !names[i].empty())
        regions.emplace("arg" + std::to_string(i), it->second);
    }
  }
  check_pass_pipelines(c, m->backend);
  if (c.llm.enabled()) {
    std::string why = evolve::check_endpoint(c.llm);
    if (!why.empty()) c.fail("llm.endpoint", why);
  }
  m->database = c.output.run_database;
  // Where the results go must be writable (its nearest existing folder, when it is still to be
  // made): found now, not after the budget was spent.
  for (const auto& [key, path] : {std::pair{"output.directory", c.output.directory},
                                  std::pair{"output.run_database", m->database.parent_path()}}) {
    std::filesystem::path existing = path;
    std::error_code ec;
    while (!existing.empty() && !std::filesystem::exists(existing, ec)) existing = existing.parent_path();
    if (!existing.empty() && (!std::filesystem::is_directory(existing, ec) ||
                              ::access(existing.c_str(), W_OK | X_OK) != 0))
      c.fail(key, path.string() + " cannot be written (" + existing.string() +
                      (std::filesystem::is_directory(existing, ec) ? " is not writable"
                                                                   : " is not a directory") +
                      ")");
  }
  if (dry_run) {
    m->search = std::make_unique<Search>(c, m->backend, *m->capture, std::move(kernels));
    return m;
  }
  std::error_code ec;
  std::filesystem::create_directories(m->database.parent_path(), ec);
  if (ec)
    c.fail("output.directory",
           "cannot create " + m->database.parent_path().string() + ": " + ec.message());
  if (std::filesystem::exists(m->database) && !std::filesystem::is_regular_file(m->database))
    c.fail("output.run_database", m->database.string() + " is not a regular file" +
                                      (std::filesystem::is_directory(m->database)
                                           ? " but a directory: name the file, e.g. " +
                                                 (m->database / "run.h5").string()
                                           : std::string()));
  m->lock = std::make_unique<run::DatabaseLock>(m->database);
  if (!m->lock->taken_over().empty())
    log::warning("took over the lock ", m->lock->path().string(), " left by a job that ended without releasing it (",
                 m->lock->taken_over(), ")");
  m->search = std::make_unique<Search>(c, m->backend, *m->capture, std::move(kernels));
  const bool resume =
      options.resume || (options.resume_if_present && std::filesystem::exists(m->database));
  if (resume) {
    if (!std::filesystem::exists(m->database))
      throw UsageError("--resume: there is no run database at " + m->database.string() +
                       " to resume (start the run without --resume)");
    m->record = run::read_run_database(m->database);
    if (m->record.tune_yaml != c.text)
      log::warning(c.file.string(), " changed since the run began; resuming with the new text");
    auto t0 = Clock::now();
    m->search->restore(m->record);
    log::info("resumed ", m->database.string(), ": ", m->record.generations, " generation(s), ",
              m->record.candidates.size(), " candidate(s) replayed into the search in ",
              format_ms(seconds_since(t0)));
  } else if (std::filesystem::exists(m->database)) {
    throw UsageError("a run database already exists at " + m->database.string() +
                     ": continue it with 'r3-mpi " + options.tune_file +
                     " --resume', or move it away to start afresh");
  }
  m->record.tune_yaml = c.text;
  m->record.tune_file = c.file.string();
  m->record.r3_version = std::string(version_string());
  m->record.sessions += 1;
  if (c.llm.enabled()) m->llm = std::make_unique<LlmWorker>(c.llm, c.budget.llm_cost);
  log::info("r3-mpi: ", c.kernels.size(), " kernel(s), backend ", config::to_string(m->backend),
            ", ",
            world_size == 1 ? std::string("1 process (searcher and evaluator)")
                            : std::to_string(world_size - 1) + " evaluator(s)",
            ", source level: ",
            c.llm.enabled() ? "LLM at " + c.llm.endpoint : std::string("built-in mutators"));
  return m;
}

EvaluatorSetup evaluator_setup(const Master& m) {
  EvaluatorSetup setup;
  setup.backend = std::string(config::to_string(m.backend));
  for (const auto& k : m.search->kernels()) {
    setup.kernels.push_back({k.capture_index, k.launches});
    setup.readable.insert(setup.readable.end(), k.base.include_dirs.begin(),
                          k.base.include_dirs.end());
    if (!k.source_name.empty())
      setup.readable.push_back(
          std::filesystem::absolute(k.source_name).parent_path().string());
  }
  setup.timeout_s = m.config.timing.candidate_timeout_s;
  setup.compile_threads = m.config.timing.compile_threads;
  setup.capture = m.config.capture;
  setup.log_level = std::string(log::to_string(log::level()));
  return setup;
}

// What the run database keeps of an evaluation's message.
std::string stored_message(const std::string& message) {
  return message.size() > 4000 ? message.substr(0, 4000) + " ..." : message;
}

// The fastest and slowest time of each recorded launch, summed (as `run.seconds` sums medians).
std::pair<double, double> summed_min_max(const replay::Evaluation& e) {
  std::pair<double, double> sums{0, 0};
  for (const auto& l : e.run.launches) {
    sums.first += l.time.min;
    sums.second += l.time.max;
  }
  return sums;
}

// Fills the candidate's record from its evaluation (null: none came back, a crash), its
// regions named as the kernel's source names them.
void record_result(const Master& m, run::CandidateRecord& r, const replay::Evaluation* evaluation,
                   int evaluator) {
  if (evaluation == nullptr) {
    r.outcome = std::string(replay::to_string(replay::Outcome::crash));
    r.message = "no result came back from its evaluator";
    return;
  }
  const replay::Evaluation& e = *evaluation;
  r.outcome = std::string(replay::to_string(e.outcome));
  r.message = with_source_names(m.parameter_names.at(r.kernel), stored_message(e.message));
  r.compile_seconds = e.compile_seconds;
  r.evaluation_seconds = e.seconds;
  r.registers = e.resources.registers;
  r.spilled_bytes = e.resources.spilled_bytes;
  r.shared_bytes = e.resources.shared_bytes;
  r.code_bytes = e.resources.code_bytes;
  r.evaluator = evaluator;
  if (e.outcome == replay::Outcome::ok) {
    r.seconds = e.run.seconds;
    std::tie(r.min_seconds, r.max_seconds) = summed_min_max(e);
  }
}

std::string batch_digest(const std::vector<Planned>& batch) {
  Hasher hasher;
  for (const Planned& p : batch) {
    hasher.update_field(std::to_string(p.record.id)).update_field(p.record.source.hex());
    hasher.update_field(p.record.plan);
  }
  return hasher.digest().hex().substr(0, 12);
}

std::string progress_line(const Master& m, std::uint32_t generation, std::size_t first,
                          double seconds, double busy_fraction,
                          const std::vector<double>& latencies) {
  std::map<std::string, int> failed;
  int ok = 0;
  for (std::size_t i = first; i < m.record.candidates.size(); ++i) {
    const auto& c = m.record.candidates[i];
    if (c.outcome == "ok")
      ++ok;
    else
      ++failed[c.outcome];
  }
  std::ostringstream line;
  line << "generation " << generation << ": " << (m.record.candidates.size() - first)
       << " candidates, " << ok << " ok";
  if (!failed.empty()) {
    int n = 0;
    std::string classes;
    for (const auto& [why, count] : failed) {
      n += count;
      classes += (classes.empty() ? "" : ", ") + std::to_string(count) + " " + why;
    }
    line << ", " << n << " failed (" << classes << ")";
  }
  for (const report::KernelResult& k : report::analyse(m.record, report::kernel_names(m.config))) {
    if (!k.best_sample) continue;
    line << "; best " << format_ms(k.best_sample->seconds);
    if (k.original) {
      line.precision(3);
      line << " (" << k.original->seconds / k.best_sample->seconds << "x over "
           << format_ms(k.original->seconds) << ")";
    }
  }
  if (m.llm) {
    if (latencies.empty()) {
      line << "; LLM: no answers yet";
    } else {
      std::vector<double> sorted = latencies;
      std::sort(sorted.begin(), sorted.end());
      line.precision(3);
      line << "; LLM: " << sorted.size() << " answers, median latency " << sorted[sorted.size() / 2]
           << " s";
    }
  }
  line << "; evaluators busy " << static_cast<int>(std::lround(100 * busy_fraction)) << "%; ";
  line.precision(3);
  line << seconds << " s";
  return line.str();
}

// One candidate to evaluate: `request` without its source text, which goes by hash.
struct BatchItem {
  std::uint64_t id = 0;
  Hash128 source;
  replay::Request request;
};

struct BatchResult {
  std::uint64_t id = 0;
  replay::Evaluation evaluation;
  int rank = 0;
};

// Broadcasts `items` (each source text once per session), lets the evaluators run them — a share
// each, or all of them each when `everyone` — and gathers the results. `busy` is the evaluators'
// summed evaluation time.
json batch_message(Master& m, std::uint32_t generation, const std::vector<BatchItem>& items,
                   bool everyone) {
  json message{{"generation", generation},
               {"everyone", everyone},
               {"sources", json::object()},
               {"candidates", json::array()}};
  for (const BatchItem& item : items) {
    if (m.sent_sources.insert(item.source).second)
      message["sources"][item.source.hex()] = m.record.sources.at(item.source);
    replay::Request request = item.request;
    request.variant.source_text.clear();
    message["candidates"].push_back({{"id", item.id},
                                     {"source", item.source.hex()},
                                     {"request", json::parse(replay::wire::encode(request))}});
  }
  return message;
}

std::vector<BatchResult> parse_results(const std::vector<std::string>& gathered, double& busy) {
  std::vector<BatchResult> results;
  busy = 0;
  for (const std::string& text : gathered) {
    if (text.empty()) continue;  // rank 0's own empty contribution
    json part = json::parse(text);
    busy += part.at("busy").get<double>();
    int rank = part.at("rank").get<int>();
    for (const json& r : part.at("results")) {
      replay::Evaluation e = replay::wire::decode_evaluation(r.at("evaluation").dump());
      // Candidate text goes no further with a secret in it: not into run.h5, the results,
      // the log or a prompt.
      e.message = redact_secrets(std::move(e.message));
      e.run.message = redact_secrets(std::move(e.run.message));
      results.push_back({r.at("id").get<std::uint64_t>(), std::move(e), rank});
    }
  }
  return results;
}

std::vector<BatchResult> run_batch(Master& m, const Collectives& world, Evaluator* local,
                                   std::uint32_t generation, const std::vector<BatchItem>& items,
                                   bool everyone, double& busy) {
  json message = batch_message(m, generation, items, everyone);
  world.broadcast(json{{"batch", message}}.dump());
  std::vector<std::string> gathered = local
                                          ? std::vector<std::string>{local->evaluate(message, 0, 1)}
                                          : world.gather(std::string());
  return parse_results(gathered, busy);
}

// Why the job cannot go on when a kernel's original (the application's code as recorded, or its
// source at its defaults) failed; "" when it may. The recorded PTX through the JIT failing is
// only a warning: the recorded code still runs, and the compiler level learns what fails.
std::string original_failure(const Master& m, const run::CandidateRecord& c, std::string& key) {
  if (c.outcome == "ok" || (c.level != "original" && c.level != "rebuilt")) return "";
  const config::KernelSelection& selection = m.config.kernels.at(c.kernel);
  const std::string kernel = "kernel '" + selection.name + "'";
  const std::string source = m.record.sources.count(c.source) ? m.record.sources.at(c.source) : "";
  const bool recorded = source.empty();
  key = "kernels[" + std::to_string(c.kernel) + "]." + (recorded ? "name" : "source");
  std::string what;
  if (recorded && c.level == "original") {
    what = "the application's code as recorded";
  } else if (recorded) {
    log::warning(kernel, ": the recorded PTX does not run through the JIT (", c.outcome, ": ",
                 first_diagnostic(c.message), "); the compiler level goes on without it");
    return "";
  } else {
    what = "its source " + selection.source.filename().string() + " at its defaults";
  }
  const std::string compiler =
      recorded ? "the CUDA driver"
               : (m.backend == config::Backend::cuda ? "NVRTC" : "Clang (host backend)");
  std::string verb =
      c.outcome == replay::to_string(replay::Outcome::compile_error)
          ? "does not compile with " + compiler
      : c.outcome == replay::to_string(replay::Outcome::wrong_result)
          ? "does not reproduce the recorded results"
          : "fails to run (" + c.outcome + ")";
  return kernel + ": " + what + " " + verb + ": " + first_diagnostic(c.message) +
         " (fix the set-up: nothing else of this kernel can be compared with it)";
}

// Stops the job with one clear error when a kernel's original failed in generation `generation`.
void refuse_broken_originals(const Master& m, std::uint32_t generation) {
  for (const auto& c : m.record.candidates) {
    if (c.generation != generation) continue;
    std::string key;
    if (std::string why = original_failure(m, c, key); !why.empty()) m.config.fail(key, why);
  }
}

// What the winner confirmation of a kernel re-measures: its original (first) and its best
// distinct verified candidates (at most timing.confirm_top); empty when the original did not
// verify or nothing else did.
std::vector<const run::CandidateRecord*> confirmation_set(const Master& m, std::size_t kernel) {
  const run::CandidateRecord* original = nullptr;
  const run::CandidateRecord* rebuilt = nullptr;
  std::vector<const run::CandidateRecord*> ranked;
  for (const auto& c : m.record.candidates) {
    if (c.kernel != kernel || c.outcome != "ok" || c.configuration.empty()) continue;
    if (c.level == "original") {
      if (!original) original = &c;
    } else {
      if (c.level == "rebuilt" && !rebuilt) rebuilt = &c;
      ranked.push_back(&c);
    }
  }
  if (!original || ranked.empty() || m.config.timing.confirm_top == 0) return {};
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto* a, const auto* b) { return a->seconds < b->seconds; });
  // The original, the rebuilt original (its ratio to the recorded code is reported), then the
  // best distinct candidates.
  std::vector<const run::CandidateRecord*> out{original};
  std::set<std::pair<Hash128, std::string>> seen{{original->source, original->configuration}};
  if (rebuilt && seen.insert({rebuilt->source, rebuilt->configuration}).second) {
    out.push_back(rebuilt);
    ranked.erase(std::find(ranked.begin(), ranked.end(), rebuilt));
  }
  const std::size_t limit = m.config.timing.confirm_top + (out.size() - 1);
  for (const auto* c : ranked) {
    if (out.size() > limit) break;
    if (seen.insert({c->source, c->configuration}).second) out.push_back(c);
  }
  return out;
}

// Wall time the confirmation will take, from the measurements so far (each evaluator runs every
// re-measurement).
double confirmation_estimate(const Master& m) {
  const config::TimingConfig& t = m.config.timing;
  double total = 0;
  for (std::size_t k = 0; k < m.search->kernels().size(); ++k) {
    for (const auto* c : confirmation_set(m, k)) {
      // What one run cost as a whole (restore, run, verify; on the host backend a process of
      // its own), from the evaluation: its verified run, warm-ups and timed runs.
      const double runs = 1.0 + t.warmup + t.repeats;
      const double per_run = std::max(c->seconds > 0 ? c->seconds : 0.0,
                                      (c->evaluation_seconds - c->compile_seconds) / runs);
      total += t.confirm_rounds *
               (c->compile_seconds + (1.0 + t.warmup + t.confirm_repeats) * per_run);
    }
  }
  return total;
}

// Re-measures the best candidates of each kernel and its original, interleaved, with more
// repetitions, on every evaluator, and commits the measurements to the run database.
void confirm_winners(Master& m, const Collectives& world, Evaluator* local) {
  const config::TimingConfig& t = m.config.timing;
  for (const auto& c : m.record.confirmations) {
    if (c.after_generation == m.record.generations) {
      log::info("the run was confirmed after generation ", c.after_generation,
                " already (a resumed run with nothing left to do)");
      return;
    }
  }
  struct Slot {
    std::uint64_t candidate;
    std::uint32_t kernel;
    std::uint32_t round;
  };
  std::vector<BatchItem> items;
  std::vector<Slot> slots;
  std::size_t kernels = 0, measured = 0;
  for (std::size_t k = 0; k < m.search->kernels().size(); ++k) {
    std::vector<const run::CandidateRecord*> set = confirmation_set(m, k);
    if (set.empty()) {
      if (t.confirm_top > 0)
        log::warning("kernel ", m.search->kernels()[k].name,
                     ": nothing to confirm (the original or every other candidate failed)");
      continue;
    }
    ++kernels;
    measured += set.size();
    for (std::uint32_t round = 0; round < t.confirm_rounds; ++round) {
      for (std::size_t j = 0; j < set.size(); ++j) {
        // Rotated each round, so that no candidate always follows the same one.
        const run::CandidateRecord& c = *set[(j + round) % set.size()];
        BatchItem item;
        item.id = items.size();
        item.source = c.source;
        item.request.kernel = c.kernel;
        item.request.variant = replay::wire::decode_variant(c.configuration);
        item.request.options = m.search->run_options(c.kernel);
        item.request.options.repeats = t.confirm_repeats;
        items.push_back(std::move(item));
        slots.push_back({c.id, c.kernel, round});
      }
    }
  }
  if (items.empty()) return;
  const int evaluators = world.size() > 1 ? world.size() - 1 : 1;
  log::info("confirming: ", measured, " candidates of ", kernels,
            " kernel(s) including the originals, ", t.confirm_rounds, " interleaved round(s) of ",
            t.confirm_repeats, " timed runs on each of ", evaluators, " evaluator(s)");
  auto start = Clock::now();
  double busy = 0;
  std::vector<BatchResult> results =
      run_batch(m, world, local, m.record.generations, items, true, busy);
  for (const BatchResult& r : results) {
    if (r.id >= slots.size()) continue;
    const Slot& slot = slots[r.id];
    run::ConfirmationRecord c;
    c.candidate = slot.candidate;
    c.kernel = slot.kernel;
    c.after_generation = m.record.generations;
    c.round = slot.round;
    c.evaluator = r.rank;
    c.repeats = t.confirm_repeats;
    c.outcome = std::string(replay::to_string(r.evaluation.outcome));
    c.message = with_source_names(m.parameter_names.at(slot.kernel),
                                  stored_message(r.evaluation.message));
    if (r.evaluation.outcome == replay::Outcome::ok) {
      c.seconds = r.evaluation.run.seconds;
      std::tie(c.min_seconds, c.max_seconds) = summed_min_max(r.evaluation);
    }
    m.record.confirmations.push_back(std::move(c));
  }
  log::info("confirmation took ", seconds_since(start), " s");
}

int run_generations(Master& m, const Collectives& world);

// Runs the generations; every rank learns how the job ended, whatever happens on rank 0.
int run_master(Master& m, const Collectives& world) {
  int status = exit_ok;
  try {
    status = run_generations(m, world);
  } catch (...) {
    status = exit_status_of_current_exception();
  }
  if (world.size() > 1) world.broadcast(json{{"stop", true}, {"status", status}}.dump());
  return status;
}

// Writes run.h5; a failing write (a full disk, a vanished directory) leaves the last commit as it
// was, and says so: nothing committed is lost, and --resume redoes only what this write held.
void commit(Master& m, const std::string& what, std::uint32_t committed_before) {
  try {
    run::write_run_database(m.database, m.record);
  } catch (const Error& e) {
    throw Error("cannot commit " + what + ": " + e.message() + "; " + m.database.string() +
                    " still holds the " + std::to_string(committed_before) +
                    " generation(s) committed before: make room, then 'r3-mpi " +
                    m.config.file.string() + " --resume' goes on from there",
                e.context());
  }
}

int run_generations(Master& m, const Collectives& world) {
  const config::TuneConfig& c = m.config;
  const int evaluators = world.size() > 1 ? world.size() - 1 : 1;
  const std::size_t batch_size = c.search.batch_size > 0 ? c.search.batch_size : 2 * evaluators;
  auto session_start = Clock::now();
  const double elapsed_before = m.record.elapsed_seconds;
  std::optional<double> job_end = job_end_time();
  std::unique_ptr<Evaluator> local;
  if (world.size() == 1) {
    local = std::make_unique<Evaluator>(evaluator_setup(m), c.capture, 0, world.node_rank(),
                                        world.node_size());
  }
  Budget budget(c.budget, job_end);
  double last_generation_s = 0;
  std::string stop_reason;
  std::vector<double> latencies;
  std::uint32_t generation = m.record.generations;
  bool stopped = false;  // by a signal: no confirmation, a status of its own
  while (true) {
    if (stop_requested() != StopRequest::none) {
      stopped = true;
      stop_reason = std::string("stopped by ") + stop_signal_name();
      break;
    }
    std::size_t evaluated = m.record.candidates.size();
    double elapsed = elapsed_before + seconds_since(session_start);
    // The confirmation at the end must fit too.
    double reserve = confirmation_estimate(m);
    stop_reason = budget.stop_reason(evaluated, generation, elapsed, reserve, now_epoch());
    if (!stop_reason.empty()) break;
    if (m.llm) {
      for (const auto& answer : m.llm->take()) {
        if (answer.status == evolve::ChatStatus::ok) latencies.push_back(answer.seconds);
        m.search->take_llm_answer(answer);
      }
    }
    auto generation_start = Clock::now();
    std::size_t count = std::min<std::size_t>(batch_size, c.budget.evaluations - evaluated);
    std::vector<Planned> batch = m.search->propose(generation, count);
    if (batch.empty()) {
      stop_reason = "the search has nothing left to propose";
      break;
    }
    // Prompts for the next generation go out now, to be answered while this one runs.
    if (m.llm && !m.llm->budget_exhausted()) {
      std::size_t want = std::max<std::size_t>(
          1, static_cast<std::size_t>(std::ceil(batch_size * c.search.source.share)));
      std::size_t in_flight = m.llm->outstanding();
      if (in_flight < 2 * want) m.llm->submit(m.search->llm_requests(2 * want - in_flight));
    }
    log::info("generation ", generation, ": evaluating ", batch.size(), " candidates (batch ",
              batch_digest(batch), ")");
    std::vector<BatchItem> items;
    for (const Planned& p : batch) {
      m.record.sources.emplace(p.record.source, m.search->sources().at(p.record.source));
      items.push_back({p.record.id, p.record.source, p.request});
    }
    double busy = 0;
    std::map<std::uint64_t, std::pair<replay::Evaluation, int>> results;
    for (BatchResult& r : run_batch(m, world, local.get(), generation, items, false, busy))
      results[r.id] = {std::move(r.evaluation), r.rank};
    if (stop_requested() == StopRequest::abandon_generation) {
      stopped = true;
      stop_reason = std::string("stopped by ") + stop_signal_name() + "; generation " +
                    std::to_string(generation) + " was abandoned (a resume evaluates it again)";
      break;
    }
    double generation_s = seconds_since(generation_start);
    std::size_t first = m.record.candidates.size();
    for (Planned& p : batch) {
      run::CandidateRecord r = p.record;
      auto it = results.find(r.id);
      if (it != results.end())
        record_result(m, r, &it->second.first, it->second.second);
      else
        record_result(m, r, nullptr, 0);
      if (r.outcome != "ok")
        log::debug("candidate ", r.id, " (", r.level, ": ", r.description, "): ", r.outcome, ": ",
                   r.message.substr(0, 600));
      m.search->observe(r);
      m.record.candidates.push_back(std::move(r));
    }
    m.search->end_generation();
    m.record.generations = ++generation;
    m.record.search_state = m.search->state();
    m.record.elapsed_seconds = elapsed_before + seconds_since(session_start);
    for (std::size_t i = first; i < m.record.candidates.size(); ++i)
      m.record.candidates[i].run_seconds = m.record.elapsed_seconds;
    commit(m, "generation " + std::to_string(generation - 1), generation - 1);
    last_generation_s = seconds_since(generation_start);
    budget.add_generation(last_generation_s);
    double busy_fraction = generation_s > 0 ? busy / (evaluators * generation_s) : 0;
    log::info(progress_line(m, generation - 1, first, last_generation_s, busy_fraction, latencies));
    // The originals run first: a set-up in which they fail would spend the budget on nothing.
    if (generation == 1) refuse_broken_originals(m, 0);
  }
  if (stopped)
    log::warning(stop_reason, ": committing what was evaluated, without the winner confirmation");
  else
    confirm_winners(m, world, local.get());
  m.record.elapsed_seconds = elapsed_before + seconds_since(session_start);
  commit(m, stopped ? "the stop" : "the winner confirmation", m.record.generations);
  report::ResultsFiles files;
  try {
    files = report::write_results(m.record, c.output.directory);
  } catch (const Error& e) {
    throw Error(e.message() + "; run.h5 is complete: once the directory can be written, 'r3 report " +
                    m.database.string() + " -o " + c.output.directory.string() +
                    "' writes the results",
                e.context());
  }
  // The summary.
  std::ostringstream summary;
  summary << "finished after " << m.record.generations << " generation(s): " << stop_reason << "\n";
  std::map<std::string, int> outcomes;
  for (const auto& cand : m.record.candidates) ++outcomes[cand.outcome];
  summary << "  " << m.record.candidates.size() << " candidates:";
  for (const auto& [why, n] : outcomes) summary << " " << n << " " << why << ";";
  summary << "\n";
  for (const std::string& line : report::summary_lines(files.results))
    summary << "  kernel " << line << "\n";
  if (m.llm) {
    evolve::Usage u = m.llm->usage();
    summary << "  LLM: " << u.prompt_tokens << " prompt + " << u.completion_tokens
            << " completion tokens, cost " << u.cost << ", " << m.search->llm_answers_rejected()
            << " answer(s) rejected\n";
  }
  summary << "  run database: " << m.database.string() << "\n";
  summary << "  results: " << files.directory.string() << "\n";
  summary << "  report: " << files.report.string();
  if (stopped)
    summary << "\n  to go on: r3-mpi " << m.config.file.string() << " --resume";
  log::info(summary.str());
  return stopped ? exit_stopped : exit_ok;
}

int run_evaluator(const Collectives& world) {
  EvaluatorSetup setup = decode_setup(world.broadcast(std::string()));
  std::string capture_bytes = world.broadcast(std::string());
  std::unique_ptr<ScratchDirectory> scratch;
  std::unique_ptr<Evaluator> evaluator;
  std::string error;
  try {
    scratch = std::make_unique<ScratchDirectory>();
    std::filesystem::path capture = scratch->path() / "capture.h5";
    {
      std::ofstream out(capture, std::ios::binary);
      out.write(capture_bytes.data(), static_cast<std::streamsize>(capture_bytes.size()));
      if (!out) throw IoError("write", "cannot write the capture to " + capture.string());
    }
    capture_bytes = std::string();
    evaluator = std::make_unique<Evaluator>(setup, capture, world.rank(), world.node_rank(),
                                            world.node_size());
  } catch (const std::exception& e) {
    error = e.what();
  }
  world.gather(error);
  if (world.broadcast(std::string()) != "go") return exit_error;
  const int shares = world.size() - 1;
  while (true) {
    json message = json::parse(world.broadcast(std::string()));
    if (message.contains("stop")) return message.at("status").get<int>();
    world.gather(evaluator->evaluate(message.at("batch"), world.rank() - 1, shares));
  }
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
  std::vector<BatchItem> items;
  for (const Planned& p : originals) {
    m->record.sources.emplace(p.record.source, m->search->sources().at(p.record.source));
    items.push_back({p.record.id, p.record.source, p.request});
  }
  double busy = 0;
  std::vector<BatchResult> results =
      parse_results({local->evaluate(batch_message(*m, 0, items, false), 0, 1)}, busy);
  std::map<std::uint64_t, const replay::Evaluation*> by_id;
  for (const BatchResult& r : results) by_id[r.id] = &r.evaluation;
  for (Planned& p : originals) {
    run::CandidateRecord& r = p.record;
    auto it = by_id.find(r.id);
    record_result(*m, r, it != by_id.end() ? it->second : nullptr, 0);
    std::cout << "# " << m->config.kernels.at(r.kernel).name << ": " << r.level << " ("
              << r.description << "): " << r.outcome;
    if (r.outcome == "ok") std::cout << ", " << format_ms(r.seconds);
    std::cout << "\n";
    m->record.candidates.push_back(r);
  }
  refuse_broken_originals(*m, 0);
}

int run_job(const JobOptions& options, const Collectives& world) {
  catch_stop_signals(/*second_ends_process=*/world.rank() == 0);
  std::unique_ptr<Master> master;
  int status = exit_ok;
  if (world.rank() == 0) {
    // Rank 0 is where evaluators' messages are redacted (parse_results).
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
    if (world.size() > 1) {
      EvaluatorSetup setup = evaluator_setup(*master);
      setup.has_capture_bytes = true;
      world.broadcast(encode(setup));
      // Read here once, sent to every evaluator: no rank but this one reads the shared file.
      world.broadcast(read_file(master->config.capture, "capture",
                                std::numeric_limits<std::uint64_t>::max()));
      std::vector<std::string> errors = world.gather(std::string());
      std::string first;
      for (std::size_t r = 1; r < errors.size(); ++r) {
        if (!errors[r].empty() && first.empty())
          first = "evaluator " + std::to_string(r) + ": " + errors[r];
      }
      world.broadcast(first.empty() ? "go" : "stop");
      if (!first.empty()) throw Error(first);
    }
    return run_master(*master, world);
  } catch (...) {
    return exit_status_of_current_exception();
  }
}

}  // namespace r3::tune
