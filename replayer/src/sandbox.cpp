// The evaluator's side of the sandbox: spawn, talk, time out, reap, restart.
#include "r3/replay/sandbox.hpp"

#include "helper_process.hpp"
#include "r3/duration.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <nlohmann/json.hpp>
#include <thread>

#include "r3/elapsed.hpp"
#include "r3/error.hpp"
#include "r3/log.hpp"
#include "r3/secrets.hpp"
#include "r3/replay/wire.hpp"
#include "candidate_process.hpp"

extern char** environ;

namespace r3::replay {
namespace {

// How long preparing the capture may take in the child (reading and placing its memory).
constexpr double kPrepareTimeoutS = 600;

// Waits up to `timeout_s` for a message; false when none came in time. `while_running`, where
// given, is called after 1 ms and then at doubling intervals of at most 32 ms until it returns
// false (a candidate of 10 ms sees it three or four times; one of seconds, about thirty times a
// second unless it says it has nothing more to do: 256 evaluators sharing two cores would
// otherwise wake thousands of times a second).
bool wait_readable(int fd, double timeout_s, const std::function<bool()>& while_running = {}) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  bool calling = static_cast<bool>(while_running);
  std::chrono::nanoseconds slice = std::chrono::milliseconds(1);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now());
    if (left <= std::chrono::nanoseconds::zero()) return false;
    const auto wait = calling ? std::min(slice, left) : left;
    const timespec pause{static_cast<time_t>(wait.count() / 1'000'000'000),
                         static_cast<long>(wait.count() % 1'000'000'000)};
    pollfd p{fd, POLLIN, 0};
    const int ready = ::ppoll(&p, 1, &pause, nullptr);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw IoError("ppoll", std::strerror(errno));
    if (ready > 0) return true;
    if (calling) {
      calling = while_running();
      slice = std::min<std::chrono::nanoseconds>(2 * slice, std::chrono::milliseconds(32));
    }
  }
}

bool needed_by_toolchain(std::string_view name) {
  for (const char* exact : {"PATH", "HOME", "LANG", "TMPDIR", "TZ", "LD_LIBRARY_PATH", "USER"})
    if (name == exact) return true;
  for (const char* prefix : {"LC_", "R3_", "CUDA_", "NVIDIA_", "__NV"})
    if (name.substr(0, std::string_view(prefix).size()) == prefix) return true;
  return false;
}

}  // namespace

std::vector<std::string> sandbox_environment(char** environment) {
  std::vector<std::string> kept;
  for (char** variable = environment; variable && *variable; ++variable) {
    std::string_view text(*variable);
    std::string_view name = text.substr(0, text.find('='));
    if (needed_by_toolchain(name) && !names_a_secret(name)) kept.emplace_back(text);
  }
  return kept;
}

std::filesystem::path find_sandbox_helper() {
  if (const char* env = std::getenv("R3_SANDBOX"); env && *env) {
    std::filesystem::path helper(env);
    if (::access(helper.c_str(), X_OK) != 0)
      throw NotAvailableError("R3_SANDBOX names '" + helper.string() +
                              "', which is not an executable program");
    return helper;
  }
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::filesystem::path> places;
  if (!ec) {
    places.push_back(self.parent_path() / "r3-sandbox");
    places.push_back(self.parent_path().parent_path() / "libexec" / "r3" / "r3-sandbox");
  }
  std::string looked;
  for (const auto& place : places) {
    if (::access(place.c_str(), X_OK) == 0) return place;
    looked += (looked.empty() ? "" : ", ") + place.string();
  }
  throw NotAvailableError("the evaluation sandbox helper r3-sandbox was not found (looked at " +
                          looked + "); set R3_SANDBOX to its path");
}

Sandbox::Sandbox(SandboxSetup setup) : setup_(std::move(setup)) {
  if (setup_.helper.empty()) setup_.helper = find_sandbox_helper();
  // A child that dies while we write to it must not take the evaluator with it.
  ::signal(SIGPIPE, SIG_IGN);
  start();
}

namespace {

// Waits for a child to end (a signal that interrupts the wait does not end it).
void wait_for_end(pid_t pid, int& status) {
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

// Ends a child: closing its request pipe ends it at end of file, and one that lives on after
// `grace` is killed. Waits for it, and says how it ended ("killed by signal 9 ...").
std::string end_child(pid_t pid, int to, int from, std::chrono::milliseconds grace) {
  if (to >= 0) ::close(to);
  if (from >= 0) ::close(from);
  auto deadline = Clock::now() + grace;
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0) {
    if (Clock::now() > deadline) {
      ::kill(pid, SIGKILL);  // it closed its pipe but lives on
      wait_for_end(pid, status);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return done < 0 ? std::string("vanished") : describe_exit_status(status);
}

}  // namespace

Sandbox::~Sandbox() {
  if (standby_.pid >= 0) {
    ::kill(standby_.pid, SIGKILL);  // it may still be preparing
    end_child(standby_.pid, standby_.to, standby_.from, std::chrono::seconds(2));
  }
  if (child_ >= 0) reap();  // the child ends at end of file
}

Sandbox::Child Sandbox::spawn_child() {
  const HelperProcess spawned = spawn_helper(setup_.helper, "--serve");
  Child child{spawned.pid, spawned.to, spawned.from};
  std::vector<std::string> readable;
  for (const auto& place : setup_.readable) readable.push_back(place.string());
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : setup_.kernels)
    kernels.push_back({{"kernel", k.kernel}, {"launches", k.launches}});
  std::string level =
      setup_.log_level.empty() ? std::string(log::to_string(log::level())) : setup_.log_level;
  nlohmann::json prepare{{"capture", setup_.capture.string()},
                         {"backend", setup_.backend},
                         {"backend_options", setup_.backend_options},
                         {"kernels", kernels},
                         {"confine", setup_.confine},
                         {"readable", readable},
                         {"log_rank", setup_.log_rank},
                         {"log_level", level},
                         {"device", setup_.device},
                         {"compile_threads", setup_.compile_threads}};
  // A child that cannot read its request dies, and take_over() finds it gone.
  (void)wire::write_message(child.to, prepare.dump());
  return child;
}

void Sandbox::take_over(Child child) {
  evaluated_by_child_ = 0;
  child_ = child.pid;
  to_child_ = child.to;
  from_child_ = child.from;
  const std::string helper = setup_.helper.string();
  std::string answer;
  bool answered = false;
  try {
    answered = wait_readable(from_child_, kPrepareTimeoutS) &&
               wire::read_message(from_child_, answer);
  } catch (const IoError&) {
    answered = false;
  }
  if (!answered) {
    stop();
    throw Error("the evaluation sandbox (" + helper + ") did not start: it gave no answer");
  }
  nlohmann::json reply = nlohmann::json::parse(answer, nullptr, false);
  if (!reply.is_object() || !reply.value("ok", false)) {
    std::string why = !reply.is_object() ? "a malformed answer" : reply.value("message", "");
    stop();
    throw Error("the evaluation sandbox could not prepare the capture: " + why);
  }
  placement_ = reply.value("placement", "");
  renew_after_ = reply.value("renew_after", std::size_t{0});
  confined_ = reply.value("confined", false);
  missing_layers_.clear();
  // (Held here: items() of the temporary value() returns would outlive it.)
  const nlohmann::json missing = reply.value("missing", nlohmann::json::object());
  for (const auto& [layer, why_not] : missing.items())
    missing_layers_[layer] = why_not.is_string() ? why_not.get<std::string>() : why_not.dump();
  if (setup_.confine && restarts_ == 0) {
    for (const auto& [layer, why_not] : missing_layers_)
      log::warning("the sandbox runs without ", layer, ": ", why_not);
  }
}

void Sandbox::start() { take_over(spawn_child()); }

void Sandbox::start_again() {
  start();
  if (!renewing_) ++restarts_;
  renewing_ = false;
}

void Sandbox::start_standby() {
  if (!setup_.standby || standby_given_up_ || standby_.pid >= 0) return;
  try {
    standby_ = spawn_child();
  } catch (const Error& e) {
    standby_given_up_ = true;
    log::warning("no standby sandbox child (", e.what(),
                 "); a lost child is replaced by a new one, which the next candidate waits for");
  }
}

bool Sandbox::bring_in_standby(const char* why, std::optional<double> old_ended_s) {
  if (standby_.pid < 0) return false;
  const auto asked_at = Clock::now();
  const Child standby = standby_;
  standby_ = {};
  try {
    take_over(standby);  // normally prepared long ago: its answer waits in the pipe
  } catch (const Error& e) {
    // Perhaps short of memory for a second copy of the capture: not tried again.
    standby_given_up_ = true;
    log::warning("the standby sandbox child could not take over (", e.what(),
                 "); a lost child is now replaced by a new one, which the next candidate waits "
                 "for");
    return false;
  }
  ++restarts_;
  ++standby_takeovers_;
  // Said for every backend that can lose its process (bench/tune_scaling counts these lines).
  if (old_ended_s)
    log::info("sandbox child replaced after ", why, ": the old one ended after ", *old_ended_s,
              " s, the standby took over after ", seconds_since(asked_at), " s");
  else
    log::info("sandbox child replaced after ", why, ": the standby took over after ",
              seconds_since(asked_at), " s");
  start_standby();
  return true;
}

void Sandbox::replace_lost_child() {
  const auto lost_at = Clock::now();
  const pid_t old = child_;
  ::kill(old, SIGKILL);
  ::close(to_child_);
  ::close(from_child_);
  to_child_ = from_child_ = -1;
  child_ = -1;
  compiling_ahead_ = false;
  if (standby_.pid >= 0) {
    // No candidate runs before the old one has ended, so that its end cannot touch the next
    // one's time; a context that died of an illegal address ends in about 0.1 s on an H200
    // (and its teardown neither slowed another process's kernels nor held up a new context).
    int status = 0;
    wait_for_end(old, status);
    if (bring_in_standby("a lost context", seconds_since(lost_at))) return;
    start_again();
    log::info("sandbox child replaced after a lost context: the new one was ready after ",
              seconds_since(lost_at), " s");
    return;
  }
  // The new one prepares the capture while the driver tears the old context down, and no
  // candidate runs before both are done.
  std::optional<Error> failed_beside_it;
  try {
    start_again();
  } catch (const Error& e) {
    failed_beside_it = e;  // perhaps short of memory the old one still held: again, after it
  }
  double ready_s = seconds_since(lost_at);
  int status = 0;
  wait_for_end(old, status);
  const double ended_s = seconds_since(lost_at);
  if (failed_beside_it) {
    log::debug("a new sandbox child could not start beside the one that lost its context (",
               failed_beside_it->what(), "); starting it again now that that one has ended");
    start_again();  // (a failed start leaves no child behind)
    ready_s = seconds_since(lost_at);
  }
  // Said for every backend that can lose its process (bench/tune_scaling counts these lines).
  log::info("sandbox child replaced after a lost context: the old one ended after ", ended_s,
            " s, the new one was ready after ", ready_s, " s");
  start_standby();  // for the next one
}

void Sandbox::stop() {
  if (child_ < 0) return;
  ::kill(child_, SIGKILL);
  reap();
}

std::string Sandbox::reap() {
  const std::string how = end_child(child_, to_child_, from_child_, std::chrono::seconds(2));
  to_child_ = from_child_ = -1;
  child_ = -1;
  return how;
}

void Sandbox::precompile(const std::vector<Request>& requests) {
  hand_over(requests, /*only_if_room=*/false);
}

bool Sandbox::precompile_if_room(const std::vector<Request>& requests) {
  return hand_over(requests, /*only_if_room=*/true);
}

bool Sandbox::hand_over(const std::vector<Request>& requests, bool only_if_room) {
  if (setup_.compile_threads == 0 || requests.empty()) return true;
  // No child (the last candidate lost it): the next evaluate() starts one, within that
  // candidate's time. Started here, the restart (the capture loaded and prepared again: seconds
  // for a large one) was time the evaluator worked but no candidate counted, and a run with many
  // crashing candidates looked idle (44 in 1000 on the demo stencil, busy 0.33-0.56 in those
  // generations). What these requests would have compiled ahead is compiled when they run.
  if (child_ < 0) return true;
  const std::string message = wire::encode_precompile(requests);
  if (only_if_room) {
    int queued = 0;
    const int capacity = ::fcntl(to_child_, F_GETPIPE_SZ);
    if (capacity <= 0 || ::ioctl(to_child_, FIONREAD, &queued) != 0) return false;  // try again
    if (message.size() + wire::kHeaderBytes > static_cast<std::size_t>(capacity - queued))
      return false;
  }
  // A child that died here is found, and restarted, by the next evaluate().
  if (wire::write_message(to_child_, message)) compiling_ahead_ = true;
  return true;
}

Evaluation Sandbox::evaluate(const Request& request, const std::function<bool()>& while_running) {
  Evaluation evaluation = evaluate_once(request, while_running);
  if (!child_died_ || !compiling_when_sent_) return evaluation;
  // The child may have died of another candidate's compile: run this one again, alone.
  compiling_ahead_ = false;
  log::warning("the sandbox died while candidates compiled ahead (", evaluation.message,
               "); the candidate is run again alone to find out whether it was the cause");
  Evaluation again = evaluate_once(request, while_running);
  again.seconds += evaluation.seconds;
  return again;
}

Evaluation Sandbox::evaluate_once(const Request& request,
                                  const std::function<bool()>& while_running) {
  auto start_time = Clock::now();
  child_died_ = false;
  if (child_ < 0) {
    // Killed (a timeout, a crash, a malformed answer): the standby takes over where there is
    // one (stop() and reap() waited for the old one's end), and is itself started once a child
    // was lost. A renewed child (the host backend's) is replaced by a fresh one.
    const bool renewal = renewing_;
    if (renewal || !bring_in_standby("a timeout or a crash", std::nullopt)) {
      start_again();
      if (!renewal) start_standby();
    }
    renewing_ = false;
    compiling_ahead_ = false;
  }
  Evaluation failed;
  // Only compiles handed over before the request can have killed the child while it ran: the
  // child reads what while_running() hands over once it has answered.
  compiling_when_sent_ = compiling_ahead_;
  Request numbered = request;
  numbered.sequence = ++sequence_;
  if (!wire::write_message(to_child_, wire::encode(numbered))) {
    failed.outcome = Outcome::crash;
    failed.message = "the sandbox died before the candidate ran (" + reap() + ")";
    child_died_ = true;
    failed.seconds = seconds_since(start_time);
    return failed;
  }
  if (!wait_readable(from_child_, setup_.timeout_s, while_running)) {
    stop();
    failed.outcome = Outcome::timeout;
    failed.message = "no result within " + r3::format_duration(setup_.timeout_s) +
                     " (timing.candidate_timeout); the sandbox was killed";
    failed.seconds = seconds_since(start_time);
    return failed;
  }
  std::string answer;
  bool got = false;
  try {
    got = wire::read_message(from_child_, answer);
  } catch (const IoError&) {
    got = false;
  }
  if (!got) {
    failed.outcome = Outcome::crash;
    failed.message = "the candidate crashed the sandbox: " + reap();
    child_died_ = true;
    failed.seconds = seconds_since(start_time);
    return failed;
  }
  Evaluation evaluation;
  try {
    evaluation = wire::decode_evaluation(answer);
  } catch (const std::exception& error) {
    stop();
    failed.outcome = Outcome::crash;
    failed.message = std::string("the sandbox answered with a malformed message (") +
                     error.what() + "); it was replaced";
    failed.seconds = seconds_since(start_time);
    return failed;
  }
  // One request, one answer, in turn: anything else on the pipe was not written by the child's
  // own code, and nothing it says can be trusted.
  pollfd more{from_child_, POLLIN, 0};
  if (evaluation.sequence != numbered.sequence ||
      (::poll(&more, 1, 0) > 0 && (more.revents & POLLIN))) {
    stop();
    failed.outcome = Outcome::crash;
    failed.message = "the sandbox answered out of turn or more than once; the candidate fails "
                     "and the sandbox was replaced";
    failed.seconds = seconds_since(start_time);
    return failed;
  }
  // A sticky CUDA error: the next candidate gets a new child, started now. The old one's end
  // (the driver tears its context down: about 1 s on an H100) and the new one's start (the
  // capture prepared again: 1-2 s for the demo's) are this candidate's cost, counted in its
  // time like a timeout's kill: not the next candidate's, and not time the evaluator seemed idle.
  if (evaluation.process_lost) replace_lost_child();
  evaluation.seconds = seconds_since(start_time);
  // Host code never runs in the child (each run is a process of its own, on memory the child
  // restores), and the CUDA backend resets its device state itself: the child goes on, unless
  // its backend asked to be renewed after so many evaluations (the host backend's grows); the
  // next evaluation starts a fresh one.
  // (Candidates it was compiling ahead are compiled again by the new one when they come.)
  if (renew_after_ > 0 && ++evaluated_by_child_ >= renew_after_) {
    stop();
    renewing_ = true;
    ++renewals_;
  }
  return evaluation;
}

}  // namespace r3::replay
