#include "nvrtc_check.hpp"

#include <dlfcn.h>
#include <nvrtc.h>

#include <filesystem>
#include <mutex>

#include "r3/error.hpp"

namespace r3::bench {
namespace {

// NVRTC loads its builtins library by name at run time, which fails on machines whose loader
// does not know the toolkit's lib directory (no ldconfig entry, no LD_LIBRARY_PATH). Loading
// it once by path from the toolkit r3 was built with lets that lookup find it by its soname.
void preload_nvrtc_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(R3_CUDA_LIBRARY_DIR, ec)) {
      if (entry.path().filename().string().starts_with("libnvrtc-builtins.so.")) {
        if (dlopen(entry.path().c_str(), RTLD_NOW | RTLD_GLOBAL)) return;
      }
    }
  });
}

}  // namespace

bool nvrtc_available() { return true; }

bool nvrtc_compiles(const std::string& source, const std::string& name,
                    const std::vector<std::string>& options, std::string& log) {
  preload_nvrtc_builtins();
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
