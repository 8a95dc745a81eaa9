#include "r3/record/application.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "r3/error.hpp"

extern char** environ;

namespace r3::record {
namespace {

namespace fs = std::filesystem;

std::string name_of(const std::string& assignment) {
  return assignment.substr(0, assignment.find('='));
}

int wait_for(std::string_view who, pid_t child) {
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) throw Error(std::string(who) + ": waitpid: " + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace

int run_application(std::string_view who, const std::vector<std::string>& command,
                    const ApplicationEnvironment& env) {
  if (command.empty())
    throw UsageError(std::string(who) + ": give the application to run after --");
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    const std::string name = name_of(entry);
    bool dropped = false;
    for (const std::string& prefix : env.dropped_prefixes)
      dropped = dropped || name.rfind(prefix, 0) == 0;
    for (const std::string& s : env.set) dropped = dropped || name_of(s) == name;
    for (const std::string& p : env.prepended_paths) {
      if (name_of(p) == name) {
        entry = p + ":" + entry.substr(name.size() + 1);
        environment.push_back(entry);
        dropped = true;
      }
    }
    if (!dropped) environment.push_back(entry);
  }
  for (const std::string& p : env.prepended_paths) {
    bool present = false;
    for (const std::string& e : environment) present = present || name_of(e) == name_of(p);
    if (!present) environment.push_back(p);
  }
  environment.insert(environment.end(), env.set.begin(), env.set.end());

  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t child = 0;
  int rc = posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), envp.data());
  if (rc != 0)
    throw Error(std::string(who) + ": cannot start '" + command[0] + "': " + std::strerror(rc));
  return wait_for(who, child);
}

// lib/ next to this program's bin/ (the build tree and an installation alike).
static std::vector<fs::path> library_places(const std::string& file_name) {
  std::vector<fs::path> places;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path prefix = self.parent_path().parent_path();
    places.push_back(prefix / R3_INSTALL_LIBDIR / file_name);
    places.push_back(prefix / "lib" / file_name);
  }
  return places;
}

std::optional<fs::path> find_cuda_injection_library() {
  if (const char* env = std::getenv("R3_RECORD_CUDA_LIBRARY"); env && *env) return fs::path(env);
  for (const fs::path& place : library_places(kCudaInjectionFile))
    if (::access(place.c_str(), R_OK) == 0) return place;
  return std::nullopt;
}

std::optional<fs::path> find_cuda_apply_library() {
  if (const char* env = std::getenv("R3_APPLY_CUDA_LIBRARY"); env && *env) return fs::path(env);
  for (const fs::path& place : library_places(kCudaApplyFile))
    if (::access(place.c_str(), R_OK) == 0) return place;
  return std::nullopt;
}

fs::path find_kokkos_library(const std::string& file_name) {
  std::vector<fs::path> places;
  if (const char* env = std::getenv("R3_KOKKOS_CONNECTOR"); env && *env) {
    // It names the connector; its companions lie next to it.
    const fs::path connector(env);
    places.push_back(file_name == kConnectorFile ? connector : connector.parent_path() / file_name);
  } else {
    places = library_places(file_name);
  }
  std::string looked;
  for (const fs::path& place : places) {
    if (::access(place.c_str(), R_OK) == 0) return place;
    looked += (looked.empty() ? "" : ", ") + place.string();
  }
  throw NotAvailableError("the Kokkos Tools connector " + file_name + " was not found (looked at " +
                          looked +
                          "); it is built when CMake finds Kokkos (R3_ENABLE_KOKKOS); set "
                          "R3_KOKKOS_CONNECTOR to the path of libr3kokkos.so");
}

std::vector<std::string> kokkos_tool_variables(const fs::path& connector) {
  return {"KOKKOS_TOOLS_LIBS=" + connector.string(),
          "KOKKOS_PROFILE_LIBRARY=" + connector.string()};
}

}  // namespace r3::record
