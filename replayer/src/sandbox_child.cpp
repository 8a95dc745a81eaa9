// The child's side of the sandbox (r3-sandbox): prepare the capture once, confine itself, then
// compile, run, verify and time one candidate per request until the parent hangs up; candidates
// announced by a precompile message compile ahead on the compile threads meanwhile. A candidate
// that kills this process is exactly what the sandbox is for.
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "r3/capture.hpp"
#include "r3/elapsed.hpp"
#include "r3/error.hpp"
#include "r3/log.hpp"
#include "r3/replay/compile_pool.hpp"
#include "r3/replay/sandbox.hpp"
#include "r3/replay/wire.hpp"
#include "confine.hpp"
#include "r3/secrets.hpp"

namespace r3::replay {
namespace {

using nlohmann::json;

struct Prepared {
  std::unique_ptr<capture::CaptureReader> capture;
  std::vector<std::unique_ptr<Backend>> backends;   // one per requested kernel
  std::vector<std::unique_ptr<CompilePool>> pools;  // one per backend
  std::string placement;
  std::size_t renew_after = 0;  // the fewest evaluations_per_process() of its backends (0: never)
};

Prepared prepare(const json& request) {
  Prepared prepared;
  const auto started = Clock::now();
  prepared.capture = std::make_unique<capture::CaptureReader>(
      capture::CaptureReader::open(request.at("capture").get<std::string>()));
  std::string times = "capture opened in " + std::to_string(seconds_since(started)) + " s";
  std::string backend = request.at("backend").get<std::string>();
  std::string options = request.value("backend_options", std::string());
  for (const json& k : request.at("kernels")) {
    const double before = seconds_since(started);
    auto b = make_backend(backend, options);
    b->prepare(*prepared.capture, k.at("kernel").get<std::size_t>(),
               k.at("launches").get<std::vector<std::size_t>>());
    times += ", kernel " + std::to_string(k.at("kernel").get<std::size_t>()) + " in " +
             std::to_string(seconds_since(started) - before) + " s";
    prepared.placement += (prepared.placement.empty() ? "" : "; ") + b->placement();
    if (const std::size_t n = b->evaluations_per_process();
        n > 0 && (prepared.renew_after == 0 || n < prepared.renew_after))
      prepared.renew_after = n;
    prepared.backends.push_back(std::move(b));
  }
  // What a new child costs the evaluator that waits for it (a lost context's successor).
  log::debug("r3-sandbox: prepared in ", seconds_since(started), " s: ", times);
  return prepared;
}

// The compile threads start after confinement: namespaces and Landlock hold only the thread that
// asks for them and what it starts afterwards.
// Backends that can translate elsewhere (CUDA: NVRTC) compile in worker processes, this program
// run again as `--compile-worker`.
void start_compile_pools(Prepared& prepared, unsigned threads) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  for (auto& backend : prepared.backends)
    prepared.pools.push_back(
        std::make_unique<CompilePool>(*backend, threads, ec ? std::filesystem::path() : self));
}

// The system's directories a compiler reads (headers, its own resource directory) and what the
// job named (the kernels' include directories and their sources' directories).
std::vector<std::filesystem::path> readable_places(const json& setup,
                                                   const std::vector<std::filesystem::path>& more) {
  std::vector<std::filesystem::path> places = {"/usr", "/lib", "/lib64", "/lib32",
                                               "/etc/ld.so.cache"};
  for (const std::string& place : setup.value("readable", std::vector<std::string>{}))
    places.emplace_back(place);
  places.insert(places.end(), more.begin(), more.end());
  return places;
}

// Puts every layer in place that this machine allows; what is missing, and why, goes back to
// the evaluator, which says so once.
json confine(const json& setup, Prepared& prepared) {
  json missing = json::object();
  auto layer = [&](const char* name, const std::string& why_not) {
    if (!why_not.empty()) missing[name] = why_not;
  };
  std::vector<std::filesystem::path> compiler_reads;
  for (const auto& backend : prepared.backends) {
    auto reads = backend->compiler_reads();
    compiler_reads.insert(compiler_reads.end(), reads.begin(), reads.end());
  }
  layer("namespaces (user, network, IPC, UTS, mount)", enter_namespaces());
  layer("Landlock (read-only, below the include paths)",
        restrict_filesystem(readable_places(setup, compiler_reads)));
  layer("dropped capabilities", drop_privileges());
  layer("the seccomp filter", confine_process());
  const std::string no_pid_namespace = pid_namespace_unavailable();
  layer("a PID namespace for each candidate process", no_pid_namespace);
  CandidateLimits limits;
  limits.confine = true;
  limits.pid_namespace = no_pid_namespace.empty();
  for (const auto& backend : prepared.backends) backend->set_candidate_limits(limits);
  return missing;
}

// A source is compiled under its absolute path, so that its quoted includes resolve beside it;
// what is kept of its diagnostics (run.h5, the report, the LLM's next prompt) names the file
// alone, as the application's build would, and says nothing of the directories above it.
std::string naming_the_file_alone(const std::string& text, const std::string& source_name) {
  const std::filesystem::path path(source_name);
  if (!path.is_absolute() || !path.has_filename()) return text;
  const std::string file = path.filename().string();
  std::string out;
  std::size_t from = 0;
  for (std::size_t at; (at = text.find(source_name, from)) != std::string::npos;
       from = at + source_name.size())
    out.append(text, from, at - from).append(file);
  return out.append(text, from, std::string::npos);
}

Evaluation evaluate(Backend& backend, CompilePool& pool, const Request& request) {
  Evaluation evaluation;
  try {
    Compiled compiled = pool.get(request.variant);
    evaluation.resources = compiled.resources;
    evaluation.compile_seconds = compiled.seconds;
    evaluation.from_cache = compiled.from_cache;
    if (!compiled.ok) {
      evaluation.outcome = Outcome::compile_error;
      evaluation.message = naming_the_file_alone(
          quote_only_own_source(
              compiled.diagnostics,
              own_source_files(request.variant.source_name, request.variant.source_text)),
          request.variant.source_name);
      return evaluation;
    }
    evaluation.run = backend.run(compiled, request.options);
    evaluation.outcome = evaluation.run.outcome;
    evaluation.message = evaluation.run.message;
    if (request.options.return_code && evaluation.outcome == Outcome::ok)
      evaluation.code = backend.loadable_code(compiled);
  } catch (const std::exception& e) {
    evaluation.outcome = Outcome::launch_error;
    evaluation.message = e.what();
  }
  return evaluation;
}

}  // namespace

int sandbox_child_main(int in_fd, int out_fd) {
  // Slurm and mpirun signal every process of a job; the evaluator that owns this child decides
  // when it ends (and a candidate killed by SIGTERM would be misread as one that crashed).
  for (int stop : {SIGTERM, SIGINT, SIGUSR1}) ::signal(stop, SIG_IGN);
  std::string message;
  try {
    if (!wire::read_message(in_fd, message)) return 0;
  } catch (const Error& e) {
    log::error("r3-sandbox: ", e.what());
    return 1;
  }
  json setup = json::parse(message, nullptr, false);
  if (setup.is_discarded()) {
    log::error("r3-sandbox: the first message is not JSON (run by r3-mpi, not by hand)");
    return 2;
  }
  log::set_rank(setup.value("log_rank", -1));
  if (auto level = log::parse_level(setup.value("log_level", "info"))) log::set_level(*level);

  // Before the first CUDA call: the GPU this evaluator was given.
  if (int device = setup.value("device", -1); device >= 0)
    setenv("R3_CUDA_DEVICE", std::to_string(device).c_str(), 1);
  Prepared prepared;
  try {
    prepared = prepare(setup);
  } catch (const std::exception& e) {
    wire::write_message(out_fd, json{{"ok", false}, {"message", e.what()}}.dump());
    return 1;
  }
  json missing = json::object();
  bool confined = false;
  if (setup.value("confine", false) && setup.value("backend", "") == "host") {
    missing = confine(setup, prepared);
    confined = !missing.contains("the seccomp filter");
  } else if (setup.value("confine", false)) {
    // GPU candidates run on the GPU; the driver needs its devices, ioctls and threads, which
    // these layers would take from it (docs/security.md).
    missing["every layer"] = "candidates of the " + setup.value("backend", std::string()) +
                             " backend run on the GPU, not in this process";
  }
  start_compile_pools(prepared, setup.value("compile_threads", 0u));
  if (!wire::write_message(out_fd, json{{"ok", true},
                                        {"placement", prepared.placement},
                                        {"confined", confined},
                                        {"missing", missing},
                                        {"renew_after", prepared.renew_after}}
                                       .dump()))
    return 0;

  while (true) {
    try {
      if (!wire::read_message(in_fd, message)) return 0;
      if (auto ahead = wire::decode_precompile(message)) {
        for (const Request& r : *ahead)
          if (r.kernel < prepared.pools.size()) prepared.pools[r.kernel]->submit(r.variant);
        continue;  // no answer: the parent goes on to evaluate()
      }
      Request request = wire::decode_request(message);
      Evaluation evaluation;
      if (request.kernel >= prepared.backends.size()) {
        evaluation.outcome = Outcome::launch_error;
        evaluation.message = "no kernel #" + std::to_string(request.kernel) + " was prepared";
      } else {
        evaluation =
            evaluate(*prepared.backends[request.kernel], *prepared.pools[request.kernel], request);
        evaluation.process_lost = prepared.backends[request.kernel]->lost();
      }
      evaluation.sequence = request.sequence;
      if (!wire::write_message(out_fd, wire::encode(evaluation))) return 0;
      if (evaluation.process_lost) return 0;  // the parent starts a new child
    } catch (const std::exception& e) {
      log::error("r3-sandbox: ", e.what());
      return 1;
    }
  }
}

}  // namespace r3::replay
