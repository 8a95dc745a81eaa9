// Running a user's application under an r3 command (`r3 record`, `r3 apply`): with r3's
// environment added, its own R3_* settings of those names replaced, and its exit status returned.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace r3::record {

struct ApplicationEnvironment {
  std::vector<std::string> set;               // NAME=VALUE, replacing any NAME already there
  std::vector<std::string> dropped_prefixes;  // variables removed first (e.g. "R3_RECORD_")
  std::vector<std::string> prepended_paths;   // NAME=VALUE put before NAME's ':'-list
};

// Starts `command` (searched on PATH) and waits. Returns its exit status, 128 + signal when it
// was killed. Throws r3::Error, its message starting with `who` ("r3 record"), when it cannot
// be started or waited for.
int run_application(std::string_view who, const std::vector<std::string>& command,
                    const ApplicationEnvironment& env);

inline constexpr const char* kConnectorFile = "libr3kokkos.so";
inline constexpr const char* kCompatFile = "libr3kokkos_compat.so";
inline constexpr const char* kCudaInjectionFile = "libr3record_cuda.so";
inline constexpr const char* kCudaApplyFile = "libr3apply_cuda.so";

// The CUDA recorder (libr3record_cuda.so, loaded by CUDA from CUDA_INJECTION64_PATH) in the lib
// directory next to this program's bin directory, or R3_RECORD_CUDA_LIBRARY; nullopt when this
// r3 was built without CUDA.
std::optional<std::filesystem::path> find_cuda_injection_library();
// r3 apply's launch substitution (libr3apply_cuda.so) in the same lib directory, or
// R3_APPLY_CUDA_LIBRARY; nullopt when this r3 was built without CUDA.
std::optional<std::filesystem::path> find_cuda_apply_library();

// The Kokkos Tools connector (libr3kokkos.so) or its companion for Kokkos without tuning
// (libr3kokkos_compat.so): R3_KOKKOS_CONNECTOR names the connector, else it is looked for in
// the lib directory next to this program's bin directory. Throws r3::NotAvailableError.
std::filesystem::path find_kokkos_library(const std::string& file_name);

// KOKKOS_TOOLS_LIBS (Kokkos 4) and KOKKOS_PROFILE_LIBRARY (Kokkos 3) naming the connector.
std::vector<std::string> kokkos_tool_variables(const std::filesystem::path& connector);

}  // namespace r3::record
