// CUDA source to a cubin for one GPU architecture with NVRTC, on the calling thread (no GPU
// needed). Also what the variant's flags mean to the CUDA backend: NVRTC options, and the ptxas
// / JIT settings (-O0..-O4, --maxrregcount=N, -dlcm=ca|cg) that apply to every compile path.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "r3/replay/backend.hpp"

namespace r3::replay::cuda {

struct JitSettings {
  std::optional<int> opt_level;           // ptxas -O level, 0..4
  std::optional<int> max_registers;       // per thread
  std::optional<std::string> cache_mode;  // "ca" (L1 and L2) or "cg" (L2 only)
};

struct CudaFlags {
  std::vector<std::string> nvrtc;  // options passed to NVRTC as they are
  JitSettings jit;
  std::string error;  // a flag that is recognised but malformed; "" when all is well
};

// Splits a variant's flags. Unknown flags go to NVRTC, which rejects what it does not know.
CudaFlags split_flags(const std::vector<std::string>& flags);

struct NvrtcOutput {
  bool ok = false;
  std::string log;            // NVRTC's messages (errors with line numbers)
  std::string image;          // the cubin (or the PTX, when asked for)
  std::string function_name;  // the entry as it is named in the cubin (lowered)
  double seconds = 0;
};

// Compiles `text` for sm_<arch> (e.g. 90), or to PTX for compute_<arch> when `ptx`. `entry` is a
// mangled name (used as it is), a function name that NVRTC lowers (C++ or extern "C"), or ""
// (nothing to look up).
NvrtcOutput compile_nvrtc(const std::string& name, const std::string& text,
                          const std::string& entry,
                          const std::map<std::string, std::string>& defines,
                          const std::vector<std::filesystem::path>& include_dirs,
                          const CudaFlags& flags, int arch, bool ptx = false);

// Loads NVRTC's builtins library by path, once per process, so that NVRTC finds it where the
// loader does not know the toolkit's lib directory. compile_nvrtc calls it; so may other users
// of NVRTC in this process.
void preload_nvrtc_builtins();

// NVRTC's version, "13.0".
std::string nvrtc_version();

}  // namespace r3::replay::cuda
