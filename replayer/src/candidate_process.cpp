#include "candidate_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "confine.hpp"
#include "r3/error.hpp"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace r3::replay {

// The page both processes see. States only move forward: starting -> ready (the process is
// confined and waits) -> go (set here) -> done (set there, after the candidate returned).
struct CandidateProcess::Control {
  std::atomic<std::uint32_t> state{0};
  std::atomic<std::int32_t> forbidden_call{-1};  // the system call the filter stopped
  double before_seconds = 0;                     // how long `before` took there
};

namespace {

using Clock = std::chrono::steady_clock;

enum : std::uint32_t { kStarting = 0, kReady = 1, kGo = 2, kDone = 3 };

// Exit statuses of the candidate process that are not the candidate's doing.
constexpr int kForbiddenCall = 120;  // the filter stopped a system call (SIGSYS caught)
constexpr int kNotConfined = 121;    // a confinement layer could not be put in place

std::atomic<std::int32_t>* forbidden_call_slot = nullptr;  // the candidate process's only global

void on_forbidden_call(int, siginfo_t* info, void*) {
  if (forbidden_call_slot) forbidden_call_slot->store(info->si_syscall);
  _exit(kForbiddenCall);
}

// The state word is also a futex: the candidate process wakes whoever sleeps on it.
long futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value, const timespec* timeout) {
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op, value, timeout, nullptr, 0);
}

double cpu_seconds(clockid_t clock) {
  timespec t{};
  ::clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::uint64_t address_space_in_use(int statm) {
  char text[128] = {};
  if (statm < 0 || ::pread(statm, text, sizeof text - 1, 0) <= 0) return 0;
  return std::strtoull(text, nullptr, 10) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

void set_limit(int resource, std::uint64_t value) {
  rlimit limit{value, value};
  ::setrlimit(resource, &limit);
}

}  // namespace

std::string describe_exit_status(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return "killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended (status " + std::to_string(status) + ")";
}

CandidateProcess::CandidateProcess(std::vector<std::span<std::byte>> memory)
    : memory_(std::move(memory)) {
  void* page = ::mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) throw IoError("mmap", std::string("control page: ") + std::strerror(errno));
  control_ = new (page) Control;
  statm_ = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
}

CandidateProcess::~CandidateProcess() {
  if (statm_ >= 0) ::close(statm_);
  ::munmap(control_, sizeof(Control));
}

void CandidateProcess::serve(const std::function<void()>& before,
                             const std::function<void()>& candidate, int parent_cpu) {
  const std::uint64_t in_use = address_space_in_use(statm_);
  // On the parent's core, which the parent leaves to it (it sleeps until "done"): a core that is
  // awake and whose caches hold what the parent last touched, the same for every run.
  if (parent_cpu >= 0) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    CPU_SET(parent_cpu, &mask);
    ::sched_setaffinity(0, sizeof mask, &mask);
  }
  // Nothing of the parent's stays reachable: no pipe to answer on, no capture, no log.
  ::close_range(0, ~0U, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::prctl(PR_SET_DUMPABLE, 0);  // no core file, no /proc/<pid>/mem for anyone
  set_limit(RLIMIT_CORE, 0);
  for (const std::span<std::byte>& region : memory_) {
    if (::madvise(region.data(), region.size(), MADV_POPULATE_WRITE) != 0) {
      for (std::size_t i = 0; i < region.size(); i += 4096)
        static_cast<void>(*static_cast<volatile std::byte*>(region.data() + i));
    }
  }
  if (limits_.confine) {
    set_limit(RLIMIT_NPROC, 0);
    set_limit(RLIMIT_FSIZE, 0);
    set_limit(RLIMIT_NOFILE, 0);
    set_limit(RLIMIT_CPU, limits_.cpu_seconds);
    set_limit(RLIMIT_AS, in_use + limits_.memory_bytes);
    struct sigaction action {};
    action.sa_sigaction = on_forbidden_call;
    action.sa_flags = SA_SIGINFO;
    forbidden_call_slot = &control_->forbidden_call;
    ::sigaction(SIGSYS, &action, nullptr);
    if (!drop_privileges().empty() || !confine_candidate_calls().empty()) _exit(kNotConfined);
  }
  // Restored here, by this process's own code before any candidate code runs in it, so that
  // the memory is as warm in this core's caches as when one process restores and runs.
  auto restore_start = Clock::now();
  before();
  control_->before_seconds = std::chrono::duration<double>(Clock::now() - restore_start).count();
  // The stack pages the candidate will write are copies of the parent's until written: copy
  // them now, not while it is timed.
  {
    volatile std::byte stack[256 * 1024];
    for (std::size_t i = 0; i < sizeof stack; i += 4096) stack[i] = std::byte{0};
  }
  control_->state.store(kReady, std::memory_order_release);
  futex(&control_->state, FUTEX_WAKE, 1, nullptr);
  // Asleep until "go": a process that is not running has its CPU clock up to date, so the
  // parent reads where the run starts from exactly.
  while (control_->state.load(std::memory_order_acquire) != kGo)
    futex(&control_->state, FUTEX_WAIT, kReady, nullptr);
  candidate();
  control_->state.store(kDone, std::memory_order_release);
  futex(&control_->state, FUTEX_WAKE, 1, nullptr);
  // Asleep until killed: its CPU clock, which the parent reads, stays as it is.
  for (;;) futex(&control_->state, FUTEX_WAIT, kDone, nullptr);
}

std::string CandidateProcess::wait_for(pid_t pid, unsigned state) {
  while (true) {
    std::uint32_t now = control_->state.load(std::memory_order_acquire);
    if (now >= state) return "";
    // Asleep until the state word changes (or a while passes, to look whether it died).
    timespec a_while{0, 20'000'000};
    futex(&control_->state, FUTEX_WAIT, now, &a_while);
    if (control_->state.load(std::memory_order_acquire) >= state) return "";
    int status = 0;
    pid_t ended = ::waitpid(pid, &status, WNOHANG);
    if (ended == 0) continue;
    // Reaped: whatever the state word says now, a process of ours never ends by itself (after
    // "done" it sleeps until killed), so this one's candidate ended it.
    if (ended < 0) return "vanished";
    if (WIFEXITED(status) && WEXITSTATUS(status) == kForbiddenCall)
      return "made a system call that candidates may not make: " +
             syscall_name(control_->forbidden_call.load());
    if (WIFEXITED(status) && WEXITSTATUS(status) == kNotConfined)
      return "its process could not be confined";
    return "ended its process before it returned (" + describe_exit_status(status) + ")";
  }
}

CandidateCall CandidateProcess::run(const std::function<void()>& before,
                                    const std::function<void()>& candidate) {
  control_->state.store(kStarting);
  control_->forbidden_call.store(-1);
  const int cpu = ::sched_getcpu();
  pid_t pid = ::fork();
  if (pid < 0) throw IoError("fork", std::string("a candidate process: ") + std::strerror(errno));
  if (pid == 0) serve(before, candidate, cpu);

  CandidateCall call;
  // The run is timed by the candidate process's CPU clock, which the kernel keeps: what it
  // computed, not how long the scheduler kept it waiting on a loaded machine. (It has no
  // threads, so that is its whole cost.)
  clockid_t clock = CLOCK_MONOTONIC;
  if (::clock_getcpuclockid(pid, &clock) != 0) clock = CLOCK_MONOTONIC;
  call.failure = wait_for(pid, kReady);
  if (!call.failure.empty()) return call;  // wait_for reaped it
  call.before_seconds = control_->before_seconds;
  const double start = cpu_seconds(clock);
  control_->state.store(kGo, std::memory_order_release);
  futex(&control_->state, FUTEX_WAKE, 1, nullptr);
  call.failure = wait_for(pid, kDone);
  if (!call.failure.empty()) return call;  // wait_for reaped it
  // Stopped, so that its clock is brought up to date (and it does nothing more), then killed
  // before anything is verified: work it does after "done" is not counted as done.
  ::kill(pid, SIGSTOP);
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WSTOPPED | WEXITED | WNOWAIT) < 0 &&
         errno == EINTR) {
  }
  call.seconds = cpu_seconds(clock) - start;
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return call;
}

}  // namespace r3::replay
