#include "evaluator.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <exception>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <set>
#include <thread>

#include "r3/cores.hpp"
#include "r3/error.hpp"
#include "r3/exit_codes.hpp"
#include "r3/log.hpp"
#include "stop_signals.hpp"

namespace r3::tune {
namespace {

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
    for (const auto& entry :
         std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), ec)) {
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
      if (!ignored)
        log::info("removed ", entry.path().string(), ", the scratch copy of a job that died");
    }
  }
  std::filesystem::path path_;
};

// timing.compile_threads, or what suits this process: for GPU backends the cores it may use (its
// CPU binding when Slurm or mpirun bound it, else the node's cores shared among the node's
// processes), at most 8; none for the host backend.
unsigned compile_threads(const protocol::EvaluatorSetup& setup, int rank, int node_size) {
  if (setup.compile_threads) return *setup.compile_threads;
  if (setup.backend == "host") return 0;
  const unsigned node_cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned shared = node_cores / static_cast<unsigned>(std::max(1, node_size));
  const auto bound = static_cast<unsigned>(usable_cores());
  const unsigned cores = bound < node_cores ? bound : shared;
  // Open MPI binds each rank to one core when it starts two ranks or fewer (to a socket from
  // three on), as Slurm does with one CPU per task: the sandbox, its compile workers and NVRTC
  // then share that core. Two H100s measured candidates 2-3x slower that way (one evaluator:
  // 25-35 ms per launch or compiler candidate against 10-15 ms bound to a socket).
  if (bound == 1 && shared > 1)
    log::warning("evaluator ", rank, " is bound to one core of the node's ", node_cores,
                 ": its sandbox and compiles share it. Give each evaluator more (mpirun "
                 "--bind-to none or --map-by socket, srun --cpus-per-task)");
  return std::clamp(cores, 1u, 8u);
}

}  // namespace

Evaluator::Evaluator(const protocol::EvaluatorSetup& setup, const std::filesystem::path& capture,
                     int rank, int gpu, int node_size) {
  replay::SandboxSetup s;
  s.device = gpu;
  s.compile_threads = compile_threads(setup, rank, node_size);
  compile_threads_ = s.compile_threads;
  s.capture = capture;
  s.backend = setup.backend;
  s.backend_options = setup.simulation;
  s.kernels = setup.kernels;
  s.confine = setup.backend == "host";
  // The host backend loses no device: a child of its is renewed on a schedule, not lost.
  s.standby = setup.standby_sandbox && setup.backend != "host";
  s.readable.assign(setup.readable.begin(), setup.readable.end());
  s.timeout_s = setup.timeout_s;
  s.log_rank = rank;
  s.log_level = setup.log_level;
  sandbox_ = std::make_unique<replay::Sandbox>(std::move(s));
}

Evaluator::~Evaluator() = default;

void Evaluator::hold(const std::map<Hash128, std::string>& sources) {
  for (const auto& [hash, text] : sources) sources_.emplace(hash, text);
}

replay::Request Evaluator::request_of(const protocol::WorkItem& item) const {
  auto it = sources_.find(item.source);
  if (it == sources_.end())
    throw FormatError("candidate " + std::to_string(item.id) + " names source " +
                      item.source.hex() + ", which this evaluator was not sent");
  replay::Request request = item.request;
  request.variant.source_text = it->second;
  return request;
}

bool Evaluator::compile_ahead(const std::vector<protocol::WorkItem>& items, bool only_if_room) {
  std::vector<replay::Request> requests;
  for (const protocol::WorkItem& item : items) {
    try {
      requests.push_back(request_of(item));
    } catch (const Error&) {
      // evaluate() says so for this candidate.
    }
  }
  if (requests.empty()) return true;
  try {
    if (only_if_room) return sandbox_->precompile_if_room(requests);
    sandbox_->precompile(requests);
    return true;
  } catch (const std::exception& error) {
    log::warning("candidates are not compiled ahead: ", error.what());
    return true;
  }
}

replay::Evaluation Evaluator::evaluate(const protocol::WorkItem& item,
                                       const std::function<bool()>& while_running) {
  replay::Evaluation e;
  try {
    e = sandbox_->evaluate(request_of(item), while_running);
  } catch (const std::exception& error) {
    // The sandbox could not be restarted, or the message was bad: this candidate fails, the
    // job goes on.
    e.outcome = replay::Outcome::crash;
    e.message = std::string("the evaluator could not run it: ") + error.what();
  }
  return e;
}

std::size_t Evaluator::restarts() const { return sandbox_->restarts(); }

std::size_t Evaluator::depth() const { return 2 + compile_threads_; }

int run_evaluator(const Collectives& world) {
  protocol::EvaluatorSetup setup = protocol::decode_setup(world.broadcast(std::string()));
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
  world.gather(protocol::encode(protocol::Ready{error, evaluator ? evaluator->depth() : 2}));
  if (world.broadcast(std::string()) != "go") return exit_error;

  // Work rank 0 sent, in order; the ones handed to the compile threads already.
  std::deque<protocol::WorkItem> queue;
  std::set<std::uint64_t> compiling;
  std::optional<int> stop_status;
  // Everything that has arrived, waiting up to `wait_s` for the first message.
  auto take_in = [&](double wait_s) {
    for (auto message = world.receive(wait_s); message; message = world.receive(0.0)) {
      protocol::Message m = protocol::decode(message->bytes);
      if (auto* stop = std::get_if<protocol::Stop>(&m)) {
        stop_status = stop->status;
        return;
      }
      if (auto* work = std::get_if<protocol::Work>(&m)) {
        evaluator->hold(work->sources);
        queue.insert(queue.end(), work->items.begin(), work->items.end());
      }
    }
  };
  // The queued items after the first `from` not handed to the compile threads yet.
  auto not_compiling = [&](std::size_t from) {
    std::vector<protocol::WorkItem> ahead;
    for (std::size_t i = from; i < queue.size(); ++i)
      if (!compiling.contains(queue[i].id)) ahead.push_back(queue[i]);
    return ahead;
  };
  // While a candidate runs: the work rank 0 sent for its Done meanwhile, handed to the compile
  // threads where the pipe has room, so that the evaluator goes from one candidate to the next
  // with nothing to do in between but send its Done (between candidates, the receive and the
  // compile requests took 0.35 ms of each simulated 7.4 ms candidate, and the evaluator was
  // 90-92% busy, as on two H100s). A failure to receive ends the job as it would between
  // candidates, once the run is over. Once the evaluator holds its depth, and all of it
  // compiles, nothing more can come before its next Done but a Stop, which can wait for the
  // run's end: no more calls then.
  std::exception_ptr receive_failure;
  const std::size_t depth = evaluator->depth();
  auto while_running = [&] {
    if (stop_status || receive_failure) return false;
    try {
      take_in(0.0);
      std::vector<protocol::WorkItem> ahead = not_compiling(0);
      if (!ahead.empty() && evaluator->compile_ahead(ahead, /*only_if_room=*/true)) {
        for (const protocol::WorkItem& item : ahead) compiling.insert(item.id);
        ahead.clear();
      }
      return !stop_status && (queue.size() + 1 < depth || !ahead.empty());
    } catch (...) {
      receive_failure = std::current_exception();
      return false;
    }
  };
  while (true) {
    // Everything that has arrived; a wait only when there is nothing to run.
    if (!stop_status) take_in(queue.empty() ? 1.0 : 0.0);
    if (stop_status) {
      world.send(0, protocol::encode(protocol::Stopped{}));
      return *stop_status;
    }
    if (queue.empty()) continue;
    std::vector<protocol::WorkItem> ahead = not_compiling(1);
    for (const protocol::WorkItem& item : ahead) compiling.insert(item.id);
    evaluator->compile_ahead(ahead);
    protocol::WorkItem item = std::move(queue.front());
    queue.pop_front();
    compiling.erase(item.id);
    protocol::Done done;
    done.id = item.id;
    if (stop_requested() == StopRequest::abandon_generation) {
      done.abandoned = true;
      done.evaluation.outcome = replay::Outcome::crash;
      done.evaluation.message = std::string("abandoned: the evaluator was told to stop (") +
                                stop_signal_name() + ")";
    } else {
      done.evaluation = evaluator->evaluate(item, while_running);
    }
    done.restarts = evaluator->restarts();
    world.send(0, protocol::encode(done));
    if (receive_failure) std::rethrow_exception(receive_failure);
  }
}

}  // namespace r3::tune
