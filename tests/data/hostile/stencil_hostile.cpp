// Hostile candidates (tests/replayer/test_sandbox_hostile.cpp): the demo stencil, preceded by one
// attempt to reach outside, chosen by ATTACK. An attempt that works adds 1 to every output, so
// an unconfined run shows as a wrong result; a confined one is stopped (the candidate dies of a
// forbidden system call) or refused (the call fails and the stencil comes out right). Set by the
// test: OUTSIDE (a file outside, which must stay as it is), OUTSIDE_DIR (a directory outside),
// OUTSIDE_PID (a process outside), PORT (a TCP listener on 127.0.0.1), UNIX_PATH (a listening
// local socket). ATTACK 23 is ATTACK 22's stencil without the memo, for comparison.
#include <fcntl.h>
#include <linux/reboot.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <initializer_list>
#include <cstdlib>
#include <cstring>

#ifndef ATTACK
#define ATTACK 0
#endif

namespace {

float attempt() {
#if ATTACK == 1  // write a file with the C library
  if (std::FILE* f = std::fopen(OUTSIDE, "a")) {
    std::fputs("escaped\n", f);
    std::fclose(f);
    return 1;
  }
#elif ATTACK == 2  // write by raw system calls: open, creat
  int fd = static_cast<int>(::syscall(SYS_open, OUTSIDE, O_WRONLY | O_APPEND));
  if (fd >= 0 && ::write(fd, "escaped\n", 8) == 8) return 1;
  if (::syscall(SYS_creat, OUTSIDE_DIR "/created", 0644) >= 0) return 1;
#elif ATTACK == 3  // open by handle, which passes by every path check
  struct {
    file_handle handle;
    unsigned char bytes[128];
  } h{};
  h.handle.handle_bytes = 128;
  int mount_id = 0;
  if (::syscall(SYS_name_to_handle_at, AT_FDCWD, OUTSIDE, &h.handle, &mount_id, 0) == 0) {
    int fd = static_cast<int>(::syscall(SYS_open_by_handle_at, AT_FDCWD, &h.handle, O_WRONLY));
    if (fd >= 0 && ::write(fd, "escaped\n", 8) == 8) return 1;
  }
  if (::syscall(SYS_open_by_handle_at, AT_FDCWD, &h.handle, O_WRONLY) >= 0) return 1;
#elif ATTACK == 4  // rename, link, symlink, mkdir, unlink, truncate
  if (::syscall(SYS_mkdir, OUTSIDE_DIR "/made", 0755) == 0) return 1;
  if (::syscall(SYS_symlink, OUTSIDE, OUTSIDE_DIR "/link") == 0) return 1;
  if (::syscall(SYS_truncate, OUTSIDE, 0) == 0) return 1;
  if (::syscall(SYS_unlink, OUTSIDE) == 0) return 1;
#elif ATTACK == 5  // mount a file system over a directory outside
  if (::syscall(SYS_mount, "none", OUTSIDE_DIR, "tmpfs", 0, nullptr) == 0) return 1;
#elif ATTACK == 6  // change a file's mode, owner, attributes
  if (::syscall(SYS_chmod, OUTSIDE, 0777) == 0) return 1;
  if (::syscall(SYS_fchmodat, AT_FDCWD, OUTSIDE, 0777, 0) == 0) return 1;
  if (::syscall(SYS_chown, OUTSIDE, 12345, 12345) == 0) return 1;
  if (::syscall(SYS_setxattr, OUTSIDE, "user.r3", "x", 1, 0) == 0) return 1;
#elif ATTACK == 7  // signals to the process that runs it
  if (::syscall(SYS_kill, ::getppid(), SIGKILL) == 0) return 1;
  if (::syscall(SYS_kill, 0, SIGKILL) == 0) return 1;  // its whole process group
#elif ATTACK == 8  // signals to a process outside, by every route
  if (::syscall(SYS_kill, OUTSIDE_PID, SIGKILL) == 0) return 1;
  if (::syscall(SYS_tkill, OUTSIDE_PID, SIGKILL) == 0) return 1;
  siginfo_t info{};
  info.si_signo = SIGKILL;
  info.si_code = SI_QUEUE;
  if (::syscall(SYS_rt_sigqueueinfo, OUTSIDE_PID, SIGKILL, &info) == 0) return 1;
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, OUTSIDE_PID, 0));
  if (pidfd >= 0 && ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) == 0) return 1;
#elif ATTACK == 9  // read the parent's memory: ptrace, process_vm_readv, /proc/<pid>/mem
  char buffer[64];
  iovec local{buffer, sizeof buffer};
  iovec remote{reinterpret_cast<void*>(0x400000), sizeof buffer};
  if (::syscall(SYS_process_vm_readv, ::getppid(), &local, 1, &remote, 1, 0) > 0) return 1;
  if (::syscall(SYS_ptrace, PTRACE_ATTACH, ::getppid(), nullptr, nullptr) == 0) return 1;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/mem", static_cast<int>(::getppid()));
  if (::syscall(SYS_open, path, O_RDONLY) >= 0) return 1;
#elif ATTACK == 10  // a TCP connection to a listener outside
  int fd = static_cast<int>(::syscall(SYS_socket, AF_INET, SOCK_STREAM, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(PORT);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::syscall(SYS_connect, fd, &address, sizeof address) == 0 &&
      ::write(fd, "escaped\n", 8) == 8)
    return 1;
#elif ATTACK == 11  // a local socket to a listener outside
  int fd = static_cast<int>(::syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, UNIX_PATH, sizeof address.sun_path - 1);
  if (fd >= 0 && ::syscall(SYS_connect, fd, &address, sizeof address) == 0 &&
      ::write(fd, "escaped\n", 8) == 8)
    return 1;
#elif ATTACK == 12  // sockets of other families: netlink, packet, IPv6
  for (int family : {AF_NETLINK, AF_PACKET, AF_INET6})
    if (::syscall(SYS_socket, family, SOCK_RAW, 0) >= 0) return 1;
#elif ATTACK == 13  // a fork bomb
  for (int i = 0; i < 64; ++i)
    if (::syscall(SYS_fork) == 0) {
      for (;;) ::syscall(SYS_fork);
    }
#elif ATTACK == 14  // a thread bomb by clone
  for (int i = 0; i < 64; ++i)
    if (::syscall(SYS_clone, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD,
                  nullptr, nullptr, nullptr, 0) == 0)
      for (;;) {
      }
#elif ATTACK == 15  // memory exhaustion: 50 GB, touched
  const std::size_t size = std::size_t{50} << 30;
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    for (std::size_t i = 0; i < size; i += std::size_t{1} << 30) static_cast<char*>(p)[i] = 1;
    return 1;
  }
  // Written through, or the compiler would take the allocation away (and call it a success).
  if (volatile char* q = static_cast<char*>(std::malloc(size)); q != nullptr) {
    q[size - 1] = 1;
    return 1;
  }
#elif ATTACK == 16  // a forged result on the answer pipe, and on every other descriptor
  const char forged[] = "\x30\0\0\0\0\0\0\0{\"outcome\":\"ok\",\"seconds\":1e-7,\"message\":\"\"}";
  for (int fd = 0; fd < 1024; ++fd) ::write(fd, forged, sizeof forged - 1);
  ::syscall(SYS_exit_group, 0);
#elif ATTACK == 17  // the API key from the environment
  for (const char* name : {"OPENAI_API_KEY", "R3_LLM_API_KEY", "R3_TEST_SECRET_TOKEN"})
    if (std::getenv(name) != nullptr) return 1;
#elif ATTACK == 18  // the API key from /proc (its own environment and its parent's)
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/environ", static_cast<int>(::getppid()));
  if (::syscall(SYS_open, path, O_RDONLY) >= 0) return 1;
  if (::syscall(SYS_open, "/proc/self/environ", O_RDONLY) >= 0) return 1;
#elif ATTACK == 19  // megabytes to standard output and error
  static char text[1 << 20];
  std::memset(text, 'x', sizeof text);
  for (int i = 0; i < 8; ++i) {
    if (::write(1, text, sizeof text) > 0) return 1;
    if (::write(2, text, sizeof text) > 0) return 1;
  }
#elif ATTACK == 20  // the machine: reboot (an invalid request: reaching the kernel is enough)
  if (::syscall(SYS_reboot, 0, 0, 0, nullptr) == 0 || errno != EPERM) return 1;
#elif ATTACK == 21  // the machine: host name (set to what it is)
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  if (::syscall(SYS_sethostname, name, std::strlen(name)) == 0) return 1;
#elif ATTACK == 24  // its own number as the machine's: it could name processes outside
  if (::getpid() > 2) return 1;
#endif
  return 0;
}

}  // namespace

extern "C" void stencil2d(const float* in, float* out, int n, float alpha, double* change) {
#if ATTACK == 22  // memoised output: computed once, copied on every later run
  static float* saved = nullptr;
  if (saved != nullptr) {
    std::memcpy(out, saved, sizeof(float) * n * n);
    double sum = 0;
    for (int i = 0; i < n * n; ++i) sum += out[i] > in[i] ? out[i] - in[i] : in[i] - out[i];
    *change = sum;
    return;
  }
#endif
  const float escaped = attempt();
  double sum = 0;
  for (int y = 1; y < n - 1; ++y) {
    for (int x = 1; x < n - 1; ++x) {
      int i = y * n + x;
      float value = in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i]);
#if ATTACK == 22 || ATTACK == 23  // slow enough that copying would show
      for (volatile int slow = 0; slow < 64; slow = slow + 1) {
      }
#endif
      out[i] = escaped + value;
      sum += out[i] > in[i] ? out[i] - in[i] : in[i] - out[i];
    }
  }
  *change = sum;
#if ATTACK == 22
  saved = static_cast<float*>(std::malloc(sizeof(float) * n * n));
  std::memcpy(saved, out, sizeof(float) * n * n);
#endif
}
