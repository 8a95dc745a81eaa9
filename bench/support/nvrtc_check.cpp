#include "nvrtc_check.hpp"

#include <nvrtc.h>

#include "nvrtc_compiler.hpp"
#include "r3/error.hpp"

namespace r3::bench {
bool nvrtc_available() { return true; }

bool nvrtc_compiles(const std::string& source, const std::string& name,
                    const std::vector<std::string>& options, std::string& log) {
  replay::cuda::preload_nvrtc_builtins();
  nvrtcProgram program = nullptr;
  if (nvrtcResult r =
          nvrtcCreateProgram(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr);
      r != NVRTC_SUCCESS) {
    throw Error(std::string("nvrtcCreateProgram: ") + nvrtcGetErrorString(r));
  }
  std::vector<std::string> all = {"--gpu-architecture=compute_90", "-std=c++17"};
  all.insert(all.end(), options.begin(), options.end());
  std::vector<const char*> pointers;
  for (const std::string& o : all) pointers.push_back(o.c_str());
  const nvrtcResult result =
      nvrtcCompileProgram(program, static_cast<int>(pointers.size()), pointers.data());
  std::size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) == NVRTC_SUCCESS && size > 1) {
    std::string text(size, '\0');
    nvrtcGetProgramLog(program, text.data());
    text.resize(size - 1);
    log += text;
  }
  nvrtcDestroyProgram(&program);
  return result == NVRTC_SUCCESS;
}

}  // namespace r3::bench
