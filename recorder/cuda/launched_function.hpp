// What the driver says of a launched function, for the CUDA injection libraries (the recorder
// and r3 apply's): its names and its parameter layout. A runtime-API launch passes a CUkernel
// (the library API) where the driver API passes a CUfunction; both are asked for.
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include "r3/capture.hpp"

namespace r3::record::cuda {

struct FunctionNames {
  std::string name, demangled, label;
  bool is_library_kernel = false;  // a CUkernel launched as a CUfunction
};

// The mangled name (empty when the driver gives none) and its demangled form.
FunctionNames names_of(CUfunction f);

// The parameters' offsets and sizes.
std::vector<capture::Param> params_of(CUfunction f, bool library_kernel);

std::string demangle(const std::string& name);

}  // namespace r3::record::cuda
