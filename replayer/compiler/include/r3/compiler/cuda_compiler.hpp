// The Clang/NVPTX compile path of the CUDA backend: CUDA source -> Clang device compile (in
// process) -> LLVM IR with libdevice linked -> a pass pipeline in LLVM's textual syntax -> NVPTX
// PTX. Lives in libr3llvm; nothing here exposes an LLVM type.
#pragma once

#include <string>
#include <string_view>

#include "r3/compiler/host_compiler.hpp"

namespace r3::compiler {

struct CudaCompileResult {
  std::string ptx;            // empty when compilation failed
  std::string function_name;  // the kernel's symbol in the PTX (mangled for C++ kernels)
  Stage failed_at = Stage::none;
  std::string diagnostics;  // "name:line:column: error: ..." as for the host path
  double frontend_seconds = 0;
  double passes_seconds = 0;
  double codegen_seconds = 0;
  bool ok() const { return !ptx.empty(); }
};

// Compiles `source` for the GPU architecture `arch` ("sm_90"), runs `passes` (empty:
// "default<O3>") with the NVPTX target's own passes (NVVMReflect, ...) and emits PTX. `entry`
// is the kernel: a mangled name, or a plain name matched against the kernels the source defines.
// libdevice comes from the CUDA toolkit ($CUDA_PATH, $CUDA_HOME, /usr/local/cuda). Thread-safe.
CudaCompileResult compile_cuda_kernel(const Source& source, std::string_view entry,
                                      std::string_view passes, std::string_view arch);

}  // namespace r3::compiler
