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
#include "r3/elapsed.hpp"
#include "r3/error.hpp"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace r3::replay {

// The page the three processes see: this one (the sandbox child), the keeper it forks, and the
// candidate process the keeper forks. `state` only moves forward: starting -> ready (the
// candidate process is confined and waits) -> go (set here) -> done (set there, after the
// candidate returned). `keeper` says what the keeper saw of the candidate process; `release`
// lets the keeper reap it, only once this process will no longer signal it by its number.
struct CandidateProcess::Control {
  std::atomic<std::uint32_t> state{0};
  std::atomic<std::uint32_t> keeper{0};
  std::atomic<std::uint32_t> release{0};
  std::atomic<std::int32_t> candidate_pid{0};    // as this process numbers it; 0 until known
  std::atomic<std::int32_t> forbidden_call{-1};  // the system call the filter stopped
  double before_seconds = 0;                     // how long `before` took there
};

namespace {

enum : std::uint32_t { kStarting = 0, kReady = 1, kGo = 2, kDone = 3 };
enum : std::uint32_t { kWatching = 0, kStopped = 1, kEnded = 2 };  // Control::keeper

// Exit statuses of the candidate process (passed on by its keeper) that are not the
// candidate's doing.
constexpr int kForbiddenCall = 120;  // the filter stopped a system call (SIGSYS caught)
constexpr int kNotConfined = 121;    // a confinement layer could not be put in place
constexpr int kNotStarted = 122;     // the keeper could not start it

std::atomic<std::int32_t>* forbidden_call_slot = nullptr;  // the candidate process's only global

void on_forbidden_call(int, siginfo_t* info, void*) {
  if (forbidden_call_slot) forbidden_call_slot->store(info->si_syscall);
  _exit(kForbiddenCall);
}

// The words of the control page are also futexes: whoever changes one wakes whoever sleeps on it.
long futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value, const timespec* timeout) {
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op, value, timeout, nullptr, 0);
}

void set_and_wake(std::atomic<std::uint32_t>& word, std::uint32_t value) {
  word.store(value, std::memory_order_release);
  futex(&word, FUTEX_WAKE, 1, nullptr);
}

// Ends the calling process as `status` says another ended: the same exit code, or the same signal.
[[noreturn]] void end_as(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    ::signal(sig, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
    ::kill(::getpid(), sig);
    ::_exit(128 + sig);
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : kNotStarted);
}

// The first process of a candidate process's PID namespace: it waits to be killed with the keeper.
int namespace_init(void*) {
  ::syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  for (;;) ::syscall(SYS_pause);
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
  control_->before_seconds = seconds_since(restore_start);
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

// The keeper, between this process and the candidate process: it gives the candidate process a
// PID namespace of its own (where the machine allows), tells this process its number, reports
// when it stops or ends, and ends as it ended once released. Trusted code, under the sandbox
// child's filter.
void CandidateProcess::keep(const std::function<void()>& before,
                            const std::function<void()>& candidate, int parent_cpu) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  set_limit(RLIMIT_CORE, 0);
  pid_t init = -1;
  if (limits_.pid_namespace && ::unshare(kCandidateNamespaces) == 0) {
    // The namespace's first process is its init, which the kernel shields from signals it has
    // no handler for; the candidate process comes second and is an ordinary one. When the
    // keeper ends, so does the init, and with it anything left in the namespace.
    // It shares the keeper's memory (nothing to copy) and runs on a small stack of its own,
    // making system calls only.
    constexpr std::size_t kInitStack = 64 * 1024;
    void* stack = ::mmap(nullptr, kInitStack, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) ::_exit(kNotStarted);
    init = ::clone(&namespace_init, static_cast<char*>(stack) + kInitStack, CLONE_VM | SIGCHLD,
                   nullptr);
    if (init < 0) ::_exit(kNotStarted);
  }
  const pid_t pid = ::fork();
  if (pid < 0) ::_exit(kNotStarted);
  if (pid == 0) serve(before, candidate, parent_cpu);
  control_->candidate_pid.store(pid, std::memory_order_release);
  futex(&control_->state, FUTEX_WAKE, 1, nullptr);
  int status = 0;
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WSTOPPED | WNOWAIT) < 0) {
      if (errno == EINTR) continue;
      ::_exit(kNotStarted);
    }
    if (info.si_code != CLD_STOPPED) break;
    // Stopped by this process's parent, which reads its clock now: the report is taken (the
    // process is not reaped by it) and passed on.
    ::waitid(P_PID, static_cast<id_t>(pid), &info, WSTOPPED);
    set_and_wake(control_->keeper, kStopped);
  }
  // Ended, not yet reaped: its number stays its own until the parent says it is done with it.
  set_and_wake(control_->keeper, kEnded);
  futex(&control_->state, FUTEX_WAKE, 1, nullptr);
  while (control_->release.load(std::memory_order_acquire) == 0)
    futex(&control_->release, FUTEX_WAIT, 0, nullptr);
  wait_retrying(pid, &status);
  if (init > 0) {
    ::kill(init, SIGKILL);
    wait_retrying(init, nullptr);
  }
  end_as(status);
}

std::string CandidateProcess::describe_end(pid_t keeper) {
  set_and_wake(control_->release, 1);
  int status = 0;
  if (wait_retrying(keeper, &status) < 0) return "vanished";
  if (WIFEXITED(status) && WEXITSTATUS(status) == kForbiddenCall)
    return "made a system call that candidates may not make: " +
           syscall_name(control_->forbidden_call.load());
  if (WIFEXITED(status) && WEXITSTATUS(status) == kNotConfined)
    return "its process could not be confined";
  if (WIFEXITED(status) && WEXITSTATUS(status) == kNotStarted)
    return "its process could not be started";
  return "ended its process before it returned (" + describe_exit_status(status) + ")";
}

std::string CandidateProcess::wait_for(pid_t keeper, unsigned state) {
  // The candidate process's number is known too (the keeper sets it after the fork).
  auto reached = [&] {
    return control_->state.load(std::memory_order_acquire) >= state &&
           control_->candidate_pid.load(std::memory_order_acquire) != 0;
  };
  while (true) {
    std::uint32_t now = control_->state.load(std::memory_order_acquire);
    if (reached()) return "";
    // Asleep until the state word changes (or a while passes, to look whether it died).
    timespec a_while{0, 20'000'000};
    futex(&control_->state, FUTEX_WAIT, now, &a_while);
    if (reached()) return "";
    // A candidate process never ends by itself (after "done" it sleeps until killed), so if it
    // ended, its candidate ended it. The keeper ends only after it (or when it could not start it).
    if (control_->keeper.load(std::memory_order_acquire) == kEnded) return describe_end(keeper);
    int status = 0;
    if (::waitpid(keeper, &status, WNOHANG) != 0) return "its process could not be started";
  }
}

CandidateCall CandidateProcess::run(const std::function<void()>& before,
                                    const std::function<void()>& candidate) {
  control_->state.store(kStarting);
  control_->keeper.store(kWatching);
  control_->release.store(0);
  control_->candidate_pid.store(0);
  control_->forbidden_call.store(-1);
  const int cpu = ::sched_getcpu();
  const pid_t keeper = ::fork();
  if (keeper < 0) throw IoError("fork", std::string("a candidate process: ") + std::strerror(errno));
  if (keeper == 0) keep(before, candidate, cpu);

  CandidateCall call;
  call.failure = wait_for(keeper, kReady);
  if (!call.failure.empty()) return call;  // the keeper is reaped
  const pid_t pid = control_->candidate_pid.load();
  // The run is timed by the candidate process's CPU clock, which the kernel keeps: what it
  // computed, not how long the scheduler kept it waiting on a loaded machine. (It has no
  // threads, so that is its whole cost.) Its number stays its own until released.
  clockid_t clock = CLOCK_MONOTONIC;
  if (::clock_getcpuclockid(pid, &clock) != 0) clock = CLOCK_MONOTONIC;
  call.before_seconds = control_->before_seconds;
  const double start = cpu_seconds(clock);
  set_and_wake(control_->state, kGo);
  call.failure = wait_for(keeper, kDone);
  if (!call.failure.empty()) return call;
  // Stopped, so that its clock is brought up to date (and it does nothing more), then killed
  // before anything is verified: work it does after "done" is not counted as done.
  ::kill(pid, SIGSTOP);
  while (control_->keeper.load(std::memory_order_acquire) == kWatching) {
    timespec a_while{0, 20'000'000};
    futex(&control_->keeper, FUTEX_WAIT, kWatching, &a_while);
    int status = 0;
    if (control_->keeper.load() == kWatching && ::waitpid(keeper, &status, WNOHANG) != 0) {
      call.failure = "its process could not be started";
      return call;
    }
  }
  call.seconds = cpu_seconds(clock) - start;
  ::kill(pid, SIGKILL);
  describe_end(keeper);
  return call;
}

}  // namespace r3::replay
