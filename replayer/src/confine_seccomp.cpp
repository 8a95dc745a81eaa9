// The system-call filters, with libseccomp.
//
// Two filters, one per kind of process (docs/security.md):
// - the sandbox child (r3 code: it compiles candidates and verifies them, but runs none) gets a
//   deny-list: nothing that reaches outside (no programs, writes, mounts, signals to others,
//   other processes' memory, sockets, kernel keyrings, io_uring, ...);
// - a candidate process (candidate_process.hpp) gets an allow-list: what compiled code and the
//   C library need to compute; anything else raises SIGSYS.
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "confine.hpp"
#include "r3/replay/sandbox.hpp"

namespace r3::replay {
namespace {

// Rules are added by name, so that calls this libseccomp or architecture does not know are
// skipped rather than failing the whole filter.
class Filter {
 public:
  explicit Filter(std::uint32_t default_action) : ctx_(seccomp_init(default_action)) {
    if (ctx_ == nullptr) error_ = "seccomp_init failed";
  }
  ~Filter() {
    if (ctx_) seccomp_release(ctx_);
  }
  Filter(const Filter&) = delete;
  Filter& operator=(const Filter&) = delete;

  void add(std::uint32_t action, const char* call, unsigned count = 0, scmp_arg_cmp a = {}) {
    if (!error_.empty()) return;
    int number = seccomp_syscall_resolve_name(call);
    if (number == __NR_SCMP_ERROR) return;
    int rc = count == 0 ? seccomp_rule_add(ctx_, action, number, 0)
                        : seccomp_rule_add(ctx_, action, number, 1, a);
    if (rc != 0) error_ = std::string("seccomp_rule_add(") + call + "): " + std::strerror(-rc);
  }
  void set(enum scmp_filter_attr attribute, std::uint32_t value) {
    if (error_.empty() && seccomp_attr_set(ctx_, attribute, value) != 0)
      error_ = "seccomp_attr_set failed";
  }
  std::string load() {
    if (!error_.empty()) return error_;
    int rc = seccomp_load(ctx_);
    return rc == 0 ? "" : std::string("seccomp_load: ") + std::strerror(-rc);
  }

 private:
  scmp_filter_ctx ctx_ = nullptr;
  std::string error_;
};

}  // namespace

std::string confine_process() {
  Filter filter(SCMP_ACT_ALLOW);
  const std::uint32_t deny = SCMP_ACT_ERRNO(EPERM);
  const scmp_datum_t self = static_cast<scmp_datum_t>(::getpid());
  // No other programs; processes only by fork (the candidate processes), no debugging.
  for (const char* call : {"execve", "execveat", "vfork", "ptrace", "process_vm_readv",
                           "process_vm_writev", "pidfd_open", "pidfd_getfd", "kcmp"})
    filter.add(deny, call);
  filter.add(SCMP_ACT_ERRNO(ENOSYS), "clone3");  // glibc falls back to clone
  // Signals only to itself and its own candidate processes (which it kills when done).
  filter.add(deny, "kill", 1, SCMP_A0(SCMP_CMP_LE, 0));
  filter.add(deny, "tgkill", 1, SCMP_A0(SCMP_CMP_NE, self));
  filter.add(deny, "tkill", 1, SCMP_A0(SCMP_CMP_LE, 0));
  for (const char* call : {"rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal"})
    filter.add(deny, call);
  // No sockets of any family: the child talks to its evaluator on two inherited pipes.
  for (const char* call : {"socket", "connect", "bind", "listen", "accept", "accept4"})
    filter.add(deny, call);
  // No file opened for writing, created, truncated, renamed, removed, re-permissioned; no
  // opening by handle (it passes by every path check).
  for (scmp_datum_t mode : {scmp_datum_t{O_WRONLY}, scmp_datum_t{O_RDWR}}) {
    filter.add(deny, "open", 1, SCMP_A1(SCMP_CMP_MASKED_EQ, O_ACCMODE, mode));
    filter.add(deny, "openat", 1, SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE, mode));
  }
  for (scmp_datum_t flag : {scmp_datum_t{O_CREAT}, scmp_datum_t{O_TRUNC}}) {
    filter.add(deny, "open", 1, SCMP_A1(SCMP_CMP_MASKED_EQ, flag, flag));
    filter.add(deny, "openat", 1, SCMP_A2(SCMP_CMP_MASKED_EQ, flag, flag));
  }
  filter.add(SCMP_ACT_ERRNO(ENOSYS), "openat2");  // its flags are out of the filter's reach
  for (const char* call :
       {"creat",      "truncate",          "ftruncate",     "rename",         "renameat",
        "renameat2",  "unlink",            "unlinkat",      "mkdir",          "mkdirat",
        "rmdir",      "link",              "linkat",        "symlink",        "symlinkat",
        "chmod",      "fchmod",            "fchmodat",      "fchmodat2",      "chown",
        "fchown",     "lchown",            "fchownat",      "mknod",          "mknodat",
        "utimensat",  "utimes",            "utime",         "futimesat",      "setxattr",
        "lsetxattr",  "fsetxattr",         "removexattr",   "lremovexattr",   "fremovexattr",
        "open_by_handle_at", "name_to_handle_at", "fallocate", "copy_file_range", "splice",
        "tee",        "vmsplice",          "sendfile",      "fanotify_init",  "fanotify_mark"})
    filter.add(deny, call);
  // Nothing that changes the machine, the mounts, the namespaces or the kernel.
  for (const char* call :
       {"mount",          "umount2",       "pivot_root",    "chroot",        "move_mount",
        "open_tree",      "fsopen",        "fsmount",       "fsconfig",      "mount_setattr",
        "setns",         "reboot",        "sethostname",   "setdomainname",
        "kexec_load",     "kexec_file_load", "init_module", "finit_module",  "delete_module",
        "swapon",         "swapoff",       "acct",          "settimeofday",  "clock_settime",
        "adjtimex",       "clock_adjtime", "quotactl",      "syslog",        "ioperm",
        "iopl",           "keyctl",        "add_key",       "request_key",   "bpf",
        "perf_event_open", "userfaultfd",  "io_uring_setup", "io_uring_enter",
        "io_uring_register", "personality", "setuid",       "setgid",        "setreuid",
        "setregid",       "setresuid",     "setresgid",     "setgroups",     "setpriority",
        "sched_setscheduler"})
    filter.add(deny, call);
  // unshare only for a candidate process's own user and PID namespaces (pid_namespace_unavailable).
  filter.add(deny, "unshare", 1, SCMP_A0(SCMP_CMP_NE, scmp_datum_t{kCandidateNamespaces}));
  return filter.load();
}

std::string confine_candidate_calls() {
  Filter filter(SCMP_ACT_TRAP);
  filter.set(SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);  // 32-bit entry points
  const scmp_datum_t self = static_cast<scmp_datum_t>(::getpid());
  for (const char* call :
       {"read",       "write",          "readv",        "writev",        "pread64",
        "pwrite64",   "close",          "fstat",        "newfstatat",    "lseek",
        "mmap",       "munmap",         "mremap",       "mprotect",      "madvise",
        "brk",        "futex",          "exit",         "exit_group",    "rt_sigreturn",
        "rt_sigprocmask", "rt_sigaction", "sigaltstack", "clock_gettime", "clock_getres",
        "clock_nanosleep", "nanosleep", "gettimeofday", "time",          "getpid",
        "gettid",     "getuid",         "geteuid",      "getgid",        "getegid",
        "getrandom",  "sched_yield",    "sched_getaffinity", "restart_syscall", "getrusage",
        "rseq",       "uname",          "sysinfo"})
    filter.add(SCMP_ACT_ALLOW, call);
  filter.add(SCMP_ACT_ALLOW, "prlimit64", 1, SCMP_A2(SCMP_CMP_EQ, 0));  // reading limits only
  filter.add(SCMP_ACT_ALLOW, "getrlimit");
  // abort() and raise(): signals to itself, to nobody else.
  filter.add(SCMP_ACT_ALLOW, "kill", 1, SCMP_A0(SCMP_CMP_EQ, self));
  filter.add(SCMP_ACT_ALLOW, "tgkill", 1, SCMP_A0(SCMP_CMP_EQ, self));
  filter.add(SCMP_ACT_ALLOW, "tkill", 1, SCMP_A0(SCMP_CMP_EQ, self));
  filter.add(SCMP_ACT_ERRNO(ENOTTY), "ioctl");  // isatty() on a closed descriptor
  return filter.load();
}

std::string syscall_name(int number) {
  if (number < 0) return "(unknown)";
  char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, number);
  if (name == nullptr) return "#" + std::to_string(number);
  std::string result(name);
  std::free(name);
  return result;
}

}  // namespace r3::replay
