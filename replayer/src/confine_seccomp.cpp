// The sandbox child's confinement, with libseccomp: the candidate may compute, allocate, read
// files and write to the descriptors it inherited, nothing else that reaches outside.
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "r3/replay/sandbox.hpp"

namespace r3::replay {

std::string confine_process() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return "seccomp_init failed";
  const std::uint32_t deny = SCMP_ACT_ERRNO(EPERM);
  const scmp_datum_t self = static_cast<scmp_datum_t>(::getpid());
  int rc = 0;
  auto add = [&](std::uint32_t action, int syscall, unsigned count = 0,
                 scmp_arg_cmp a = scmp_arg_cmp{}) {
    if (rc != 0) return;
    rc = count == 0 ? seccomp_rule_add(ctx, action, syscall, 0)
                    : seccomp_rule_add(ctx, action, syscall, 1, a);
  };
  // No other programs, no child processes (threads stay allowed), no debugging of others.
  for (int call : {SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(fork), SCMP_SYS(vfork),
                   SCMP_SYS(ptrace), SCMP_SYS(process_vm_writev)})
    add(deny, call);
  add(deny, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  add(SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3));  // glibc falls back to clone
  // Signals only to itself (abort() is tgkill on itself); never to the evaluator or the job.
  add(deny, SCMP_SYS(kill), 1, SCMP_A0(SCMP_CMP_NE, self));
  add(deny, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_NE, self));
  // No network: only local (AF_UNIX) sockets.
  add(deny, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
  // No file opened for writing, created, truncated, renamed, removed or re-permissioned.
  for (scmp_datum_t mode : {scmp_datum_t{O_WRONLY}, scmp_datum_t{O_RDWR}}) {
    add(deny, SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, O_ACCMODE, mode));
    add(deny, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE, mode));
  }
  for (scmp_datum_t flag : {scmp_datum_t{O_CREAT}, scmp_datum_t{O_TRUNC}}) {
    add(deny, SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, flag, flag));
    add(deny, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, flag, flag));
  }
  add(SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2));  // its flags are out of the filter's reach
  for (int call : {SCMP_SYS(creat),     SCMP_SYS(truncate),  SCMP_SYS(rename),   SCMP_SYS(renameat),
                   SCMP_SYS(renameat2), SCMP_SYS(unlink),    SCMP_SYS(unlinkat), SCMP_SYS(mkdir),
                   SCMP_SYS(mkdirat),   SCMP_SYS(rmdir),     SCMP_SYS(link),     SCMP_SYS(linkat),
                   SCMP_SYS(symlink),   SCMP_SYS(symlinkat), SCMP_SYS(chmod),    SCMP_SYS(fchmodat),
                   SCMP_SYS(chown),     SCMP_SYS(lchown),    SCMP_SYS(fchownat), SCMP_SYS(mknod),
                   SCMP_SYS(mknodat),   SCMP_SYS(utimensat)})
    add(deny, call);
  if (rc != 0) {
    seccomp_release(ctx);
    return std::string("seccomp_rule_add: ") + std::strerror(-rc);
  }
  rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) return std::string("seccomp_load: ") + std::strerror(-rc);
  return "";
}

}  // namespace r3::replay
