// What this build of r3 is: version, revision, and the optional parts it was built with.
#pragma once

#include <string>
#include <string_view>

namespace r3 {

std::string_view version_string();  // "0.1.0"
std::string_view git_revision();    // "v0.1.0-12-gabcdef012345" or "unknown"
// Optional parts this build contains (from r3/config.hpp, for code outside backend directories).
bool build_has_cuda();
bool build_has_llvm();
bool build_has_kokkos();
bool build_has_mpi();

// Several lines: version, revision, and one line per optional part (CUDA, LLVM, Kokkos, MPI).
std::string build_description();

}  // namespace r3
