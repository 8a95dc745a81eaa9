#include "helper_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "r3/error.hpp"
#include "r3/replay/sandbox.hpp"

extern char** environ;

namespace r3::replay {

HelperProcess spawn_helper(const std::filesystem::path& program_path, const std::string& mode) {
  constexpr int kHelperIn = 3, kHelperOut = 4;
  int to[2], from[2];
  if (::pipe2(to, O_CLOEXEC) != 0) throw IoError("pipe2", std::strerror(errno));
  if (::pipe2(from, O_CLOEXEC) != 0) {
    ::close(to[0]);
    ::close(to[1]);
    throw IoError("pipe2", std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to[0], kHelperIn);
  posix_spawn_file_actions_adddup2(&actions, from[1], kHelperOut);
  posix_spawn_file_actions_addclosefrom_np(&actions, kHelperOut + 1);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::string program = program_path.string();
  std::string argument = mode;
  char* argv[] = {program.data(), argument.data(), nullptr};
  std::vector<std::string> environment = sandbox_environment(environ);
  std::vector<char*> envp;
  for (std::string& variable : environment) envp.push_back(variable.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int error = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(to[0]);
  ::close(from[1]);
  if (error != 0) {
    ::close(to[1]);
    ::close(from[0]);
    throw IoError("posix_spawn", program + ": " + std::strerror(error));
  }
  return HelperProcess{pid, to[1], from[0]};
}

}  // namespace r3::replay
