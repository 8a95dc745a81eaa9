// `r3 apply` for CUDA programs, replay's part: the winners of a result compiled for the GPU at
// hand, as replay compiles them (the same compiler, flags, JIT settings and launch shape), for
// the apply library to load into the application (recorder/cuda/apply_manifest.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "r3/capture.hpp"

namespace r3::replay {

struct WinnerCode {
  std::filesystem::path result_file;  // its best.yaml
  std::string kernel;                 // as the application's driver names it (mangled)
  std::string function;               // its name in the code
  std::string cubin;
  std::optional<capture::Dim3> block;
  bool keep_grid = false;
  double speedup = 0;  // the replay-confirmed factor; 0 when not confirmed
  // The run's tolerances by element type, |x - ref| <= atol + rtol |ref| (verify.types; types
  // not listed are compared bit for bit): what `r3 apply --check` compares with.
  struct Tolerance {
    capture::ElementType type;
    double rtol, atol;
  };
  std::vector<Tolerance> tolerances;
  std::vector<std::string> globals;  // the recorded module variables of the kernel's module
};

struct WinnerCodes {
  std::string architecture;          // of this GPU ("sm_90")
  std::vector<WinnerCode> winners;   // the kernels to substitute
  std::vector<std::string> refused;  // "kernel: why its application code runs"
};

// The best.yaml files of a result: the file itself, or a results directory's best.yaml and
// <kernel>/best.yaml files. Throws ConfigError when there is none.
std::vector<std::filesystem::path> result_files(const std::filesystem::path& result);

// Whether a result is a CUDA application's: its backend is cuda and its capture, which must be
// here, holds CUDA kernels recorded without a Kokkos label (Kokkos kernels are tuned through
// Kokkos' tuning interface). Otherwise the result is Kokkos tuned values; a cuda result whose
// capture is missing is said so on `report`.
bool is_cuda_result(const std::vector<std::filesystem::path>& files, std::ostream& report);

// Each result's winner compiled for this GPU. A kernel is refused (and runs the application's
// code) when its result says to keep the application's code, when it was tuned on another GPU
// architecture or with another CUDA toolkit, or when its winner does not compile here. Says
// what it does on `report`. Throws ConfigError for a result it cannot read.
WinnerCodes compile_winners(const std::vector<std::filesystem::path>& files, std::ostream& report);

// A Kokkos TeamPolicy kernel of a result, as Kokkos' team-size tuner sees it on this GPU: what
// `r3 apply` hands the Kokkos connector so that it can answer the tuner's fractions
// (recorder/kokkos/team_tuner.hpp).
struct KokkosTeamKernel {
  std::string label;
  // Team size x vector length Kokkos allows the kernel here: the largest power of two of at most
  // 1024 threads and at most the function's limit (its registers), as Kokkos' team_size_max()
  // finds it for a kernel without scratch.
  std::uint32_t max_team_threads = 0;
  bool auto_team_size = false, auto_vector_length = false;  // left to Kokkos by the application
};

// The Kokkos TeamPolicy kernels of a result's captures whose policy leaves the team size or the
// vector length to Kokkos, with their limits found by loading the recorded code on this GPU.
// Kernels it cannot say so much about are left out, with the reason on `report`.
std::vector<KokkosTeamKernel> kokkos_team_kernels(const std::vector<std::filesystem::path>& files,
                                                  std::ostream& report);

}  // namespace r3::replay
