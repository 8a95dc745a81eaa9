// The layers that hold candidate code (docs/security.md): what each one does and, where a build
// or a kernel lacks it, why not. Every function returns "" when the layer is in place, else the
// reason it is not, so that the caller can report it once.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace r3::replay {

// The allow-list filter of a process that runs candidate code and nothing else (the candidate
// process, candidate_process.hpp): computing, memory, time, futexes, writes to descriptors it
// has (none), signals to itself. Any other system call raises SIGSYS (caught by the candidate
// process, which records the call and ends). Needs no_new_privs set.
std::string confine_candidate_calls();

// The name of a system call number on this architecture ("mount"), or "#<n>".
std::string syscall_name(int number);

// Landlock: from now on this process (and what it starts) may read files and list directories
// only beneath `readable`, and write, create or remove nothing anywhere. Must be called before
// the process starts threads (Landlock holds the calling thread and its future children).
std::string restrict_filesystem(const std::vector<std::filesystem::path>& readable);

// New user, network, IPC, UTS and mount namespaces for this process: no network at all (not
// even abstract local sockets outside), and no capability that counts outside, root or not.
// Must be called before the process starts threads. (Not a PID namespace: a process that has
// unshared one cannot start threads, and this one compiles on threads. Each candidate process
// gets one of its own instead: kCandidateNamespaces.)
std::string enter_namespaces();

// What the process that starts a candidate process unshares first (candidate_process.cpp): a
// user namespace, for the right to make the other without privileges, and a PID namespace, in
// which the candidate sees no process outside and no process outside sees it by number.
constexpr int kCandidateNamespaces = 0x10000000 /* CLONE_NEWUSER */ | 0x20000000 /* CLONE_NEWPID */;

// Whether processes started from here can have PID namespaces of their own (a probe process
// tries): "" when they can, else why not. The seccomp filter of confine_process() allows
// exactly this unshare.
std::string pid_namespace_unavailable();

// Waits for the child process `pid` to end, through interruptions; waitpid's result.
pid_t wait_retrying(pid_t pid, int* status);

// Drops every capability of the calling process (effective, permitted, inheritable, bounding
// set, ambient) and sets no_new_privs: running as root widens nothing after this.
std::string drop_privileges();

}  // namespace r3::replay
