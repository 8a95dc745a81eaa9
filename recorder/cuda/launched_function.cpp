#include "launched_function.hpp"

#include <cxxabi.h>

#include <cstdlib>

namespace r3::record::cuda {

std::string demangle(const std::string& name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string result = status == 0 && out ? out : "";
  std::free(out);
  return result;
}

FunctionNames names_of(CUfunction f) {
  FunctionNames n;
  const char* name = nullptr;
  if (cuFuncGetName(&name, f) == CUDA_SUCCESS && name) {
    n.name = name;
  } else if (cuKernelGetName(&name, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS && name) {
    n.name = name;
    n.is_library_kernel = true;
  }
  n.demangled = demangle(n.name);
  return n;
}

std::vector<capture::Param> params_of(CUfunction f, bool library_kernel) {
  std::vector<capture::Param> params;
  for (std::size_t i = 0;; ++i) {
    std::size_t offset = 0, size = 0;
    CUresult rc = library_kernel
                      ? cuKernelGetParamInfo(reinterpret_cast<CUkernel>(f), i, &offset, &size)
                      : cuFuncGetParamInfo(f, i, &offset, &size);
    if (rc != CUDA_SUCCESS) break;
    capture::Param p;
    p.offset = offset;
    p.size = size;
    params.push_back(p);
  }
  return params;
}

}  // namespace r3::record::cuda
