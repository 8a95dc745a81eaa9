#include "r3/version.hpp"

#include "r3/config.hpp"

namespace r3 {
namespace {

std::string feature_line(std::string_view name, bool present, std::string_view version) {
  std::string line = "  " + std::string(name) + ": ";
  if (!present) return line + "no\n";
  line += "yes";
  if (!version.empty()) line += " (" + std::string(version) + ")";
  return line + "\n";
}

}  // namespace

std::string_view version_string() { return R3_VERSION_STRING; }
std::string_view git_revision() { return R3_GIT_REVISION; }

bool build_has_cuda() { return R3_HAVE_CUDA; }
bool build_has_llvm() { return R3_HAVE_LLVM; }
bool build_has_kokkos() { return R3_HAVE_KOKKOS; }
bool build_has_mpi() { return R3_HAVE_MPI; }

std::string build_description() {
  std::string out =
      "r3 " + std::string(version_string()) + " (revision " + std::string(git_revision()) + ")\n";
  out += feature_line("HDF5", true, R3_HDF5_VERSION);
  out += feature_line("MPI", R3_HAVE_MPI, R3_MPI_VERSION);
  out += feature_line("CUDA", R3_HAVE_CUDA, R3_CUDA_VERSION);
  out += feature_line("LLVM/Clang", R3_HAVE_LLVM, R3_LLVM_VERSION);
  out += feature_line("Kokkos", R3_HAVE_KOKKOS, R3_KOKKOS_VERSION);
  return out;
}

}  // namespace r3
