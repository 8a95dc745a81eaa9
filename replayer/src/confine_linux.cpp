// The confinement layers that need no library: Landlock, namespaces, capabilities.
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "confine.hpp"

namespace r3::replay {
namespace {

std::string failed(const std::string& what) { return what + ": " + std::strerror(errno); }

bool write_file(const char* path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace

std::string restrict_filesystem(const std::vector<std::filesystem::path>& readable) {
#ifdef LANDLOCK_CREATE_RULESET_VERSION
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return "this kernel has no Landlock (Linux 5.13 or later, with lsm=landlock)";
  // Every access right the kernel knows is handled, so that any right not granted is refused.
  std::uint64_t handled = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1
#ifdef LANDLOCK_ACCESS_FS_REFER
  if (abi >= 2) handled |= LANDLOCK_ACCESS_FS_REFER;
#endif
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
  if (abi >= 3) handled |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = handled;
  int ruleset = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) return failed("landlock_create_ruleset");
  const std::uint64_t read_only = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  for (const std::filesystem::path& place : readable) {
    int fd = ::open(place.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) continue;  // a place that does not exist needs no rule
    landlock_path_beneath_attr beneath{};
    beneath.parent_fd = fd;
    // A file (not a directory) can only be given the rights that apply to files.
    beneath.allowed_access =
        std::filesystem::is_directory(place) ? read_only : LANDLOCK_ACCESS_FS_READ_FILE;
    long rc = ::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0);
    ::close(fd);
    if (rc != 0) {
      std::string why = failed("landlock_add_rule(" + place.string() + ")");
      ::close(ruleset);
      return why;
    }
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    ::close(ruleset);
    return failed("prctl(PR_SET_NO_NEW_PRIVS)");
  }
  long rc = ::syscall(SYS_landlock_restrict_self, ruleset, 0);
  ::close(ruleset);
  return rc == 0 ? "" : failed("landlock_restrict_self");
#else
  static_cast<void>(readable);
  return "this build of r3 was made without Landlock headers (Linux 5.13 or later)";
#endif
}

std::string enter_namespaces() {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  // (No PID namespace: a process that has unshared one can no longer start threads, and the
  // child's compile threads start after this. The candidate processes' filter lets them signal
  // only themselves.)
  constexpr int kOthers = CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS;
  if (::unshare(CLONE_NEWUSER | kOthers) == 0) {
    // The same user inside as outside, so that files read as before; capabilities held inside
    // count only inside (and are dropped next).
    write_file("/proc/self/setgroups", "deny");
    if (!write_file("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
        !write_file("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1"))
      return "new user namespace, but its user could not be mapped";
    return "";
  }
  std::string why = failed("unshare(user, network, IPC, UTS, mount namespaces)");
  // Without user namespaces (disabled, or a container that forbids them) root can still leave
  // the network.
  if (uid == 0 && ::unshare(kOthers) == 0)
    return why + "; network, IPC, UTS and mount namespaces only";
  return why;
}

pid_t wait_retrying(pid_t pid, int* status) {
  pid_t ended;
  while ((ended = ::waitpid(pid, status, 0)) < 0 && errno == EINTR) {
  }
  return ended;
}

std::string pid_namespace_unavailable() {
  const pid_t probe = ::fork();
  if (probe < 0) return failed("fork");
  if (probe == 0) {
    if (::unshare(kCandidateNamespaces) != 0) ::_exit(errno & 0x7f);
    const pid_t first = ::fork();  // the first process of the new namespace is its PID 1
    if (first < 0) ::_exit(0x80);
    if (first == 0) ::_exit(::getpid() == 1 ? 0 : 0x81);
    int status = 0;
    wait_retrying(first, &status);
    ::_exit(WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 0x82);
  }
  int status = 0;
  wait_retrying(probe, &status);
  if (!WIFEXITED(status)) return "the probe process ended abnormally";
  const int code = WEXITSTATUS(status);
  if (code == 0) return "";
  if (code < 0x80)
    return std::string("unshare(user, PID namespaces): ") + std::strerror(code);
  return "a process started in a new PID namespace is not its first process";
}

std::string drop_privileges() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return failed("prctl(PR_SET_NO_NEW_PRIVS)");
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  // The bounding set can only be lowered with CAP_SETPCAP, i.e. by root; without it nothing can
  // raise capabilities anyway (no_new_privs, and no programs can be started).
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap) ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return failed("capset");
  return "";
}

}  // namespace r3::replay

static_assert(r3::replay::kCandidateNamespaces == (CLONE_NEWUSER | CLONE_NEWPID));
