// `r3 apply`: runs an application, unchanged, with an r3 result: a Kokkos application with the
// tuned values through the Kokkos Tools connector (libr3kokkos.so); a CUDA application with the
// winners' code in place of its kernels, through libr3apply_cuda.so (apply_manifest.hpp).
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "apply_manifest.hpp"
#include "team_tuner.hpp"

namespace r3::record {

// A CUDA result's winners, compiled for this GPU (r3::replay::compile_winners): the manifest, its
// kernels' code named by file name, and their cubins in the same order.
struct CudaWinners {
  cuda::ApplyManifest manifest;
  std::vector<std::string> cubins;
};

struct ApplyOptions {
  std::filesystem::path result;        // a best.yaml or a results directory
  bool kokkos_without_tuning = false;  // preload libr3kokkos_compat.so
  std::optional<CudaWinners> cuda;     // a CUDA result: what to substitute
  // Apply nothing, the baseline bench/app_speedup compares with: CUDA: substitute nothing, only
  // time the result's kernels on the GPU as an applied run does; Kokkos: run with the connector
  // loaded without the result.
  bool original = false;
  // CUDA: the first launch of each substituted kernel also runs the application's kernel on the
  // same memory; a winner whose results differ beyond the run's tolerances is dropped.
  bool check = false;
  // Kokkos: the largest teams of the result's TeamPolicy kernels on this GPU, for the connector
  // to answer Kokkos' team-size tuner (--kokkos-tune-internals) with.
  std::vector<kokkos::TeamLimit> kokkos_team_limits;
  std::vector<std::string> command;  // the application and its arguments
};

// Checks the result (throws r3::ConfigError naming the file and key), then runs the
// application and returns its exit status. With `cuda`: writes the manifest and the cubins to a
// private temporary directory (removed afterwards) and runs the application with the apply
// library; without a winner to substitute, the application runs as it is.
int apply_to_application(const ApplyOptions& options, std::ostream& report);

}  // namespace r3::record
