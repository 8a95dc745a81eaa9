// Starting r3-sandbox in one of its modes (`--serve`, `--compile-worker`) with two pipes on its
// descriptors 3 (requests) and 4 (answers), stdin from /dev/null, nothing else of this process's
// (no MPI sockets, no run database, no terminal input) and an environment without secrets.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

namespace r3::replay {

struct HelperProcess {
  pid_t pid = -1;
  int to = -1;    // its requests
  int from = -1;  // its answers
};

// Throws IoError when the pipes cannot be made or the program cannot be started.
HelperProcess spawn_helper(const std::filesystem::path& program, const std::string& mode);

}  // namespace r3::replay
