#include "nvrtc_compiler.hpp"

#include <dlfcn.h>
#include <nvrtc.h>

#include <filesystem>
#include <mutex>

#include <charconv>
#include <chrono>
#include <memory>

#include "r3/elapsed.hpp"

namespace r3::replay::cuda {
namespace {

std::optional<int> number_after(const std::string& flag, std::size_t prefix) {
  int value = 0;
  const char* begin = flag.data() + prefix;
  const char* end = flag.data() + flag.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end || begin == end) return std::nullopt;
  return value;
}

}  // namespace

CudaFlags split_flags(const std::vector<std::string>& flags) {
  CudaFlags out;
  for (const std::string& flag : flags) {
    if (flag.size() == 3 && flag.starts_with("-O")) {
      auto level = number_after(flag, 2);
      if (!level || *level > 4) {
        out.error = "'" + flag + "': the optimisation level must be -O0 to -O4";
        continue;
      }
      out.jit.opt_level = *level;
    } else if (flag.starts_with("--maxrregcount=") || flag.starts_with("-maxrregcount=")) {
      auto count = number_after(flag, flag.find('=') + 1);
      if (!count || *count <= 0 || *count > 255) {
        out.error = "'" + flag + "': the register limit must be 1 to 255";
        continue;
      }
      out.jit.max_registers = *count;
    } else if (flag.starts_with("-dlcm=")) {
      std::string mode = flag.substr(6);
      if (mode != "ca" && mode != "cg") {
        out.error = "'" + flag + "': the cache mode must be ca or cg";
        continue;
      }
      out.jit.cache_mode = mode;
    } else if (!flag.empty()) {
      out.nvrtc.push_back(flag);
    }
  }
  return out;
}

// NVRTC opens its builtins library by soname when it first compiles, which fails where there is
// no ldconfig entry or LD_LIBRARY_PATH for the toolkit: this loads it from libnvrtc's directory.
void preload_nvrtc_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) == 0 || info.dli_fname == nullptr)
      return;
    std::error_code ec;
    const auto dir = std::filesystem::path(info.dli_fname).parent_path();
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.path().filename().string().starts_with("libnvrtc-builtins.so.") &&
          dlopen(entry.path().c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr)
        return;
    }
  });
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

NvrtcOutput compile_nvrtc(const std::string& name, const std::string& text,
                          const std::string& entry,
                          const std::map<std::string, std::string>& defines,
                          const std::vector<std::filesystem::path>& include_dirs,
                          const CudaFlags& flags, int arch, bool ptx) {
  NvrtcOutput out;
  const auto start = std::chrono::steady_clock::now();
  auto fail = [&](const std::string& why) {
    out.log += why;
    out.seconds = seconds_since(start);
    return out;
  };
  if (!flags.error.empty()) return fail(flags.error);
  preload_nvrtc_builtins();
  nvrtcProgram raw = nullptr;
  if (nvrtcResult status =
          nvrtcCreateProgram(&raw, text.c_str(), name.c_str(), 0, nullptr, nullptr);
      status != NVRTC_SUCCESS)
    return fail(std::string("nvrtcCreateProgram failed: ") + nvrtcGetErrorString(status));
  std::unique_ptr<_nvrtcProgram, void (*)(_nvrtcProgram*)> program(
      raw, [](_nvrtcProgram* p) { nvrtcDestroyProgram(&p); });
  // A mangled name (or none) is looked up as it is; a plain name is lowered by NVRTC.
  const bool lower = !entry.empty() && !entry.starts_with("_Z");
  if (lower) {
    if (nvrtcResult status = nvrtcAddNameExpression(raw, entry.c_str()); status != NVRTC_SUCCESS)
      return fail(std::string("nvrtcAddNameExpression failed: ") + nvrtcGetErrorString(status));
  }
  std::vector<std::string> options = {(ptx ? "-arch=compute_" : "-arch=sm_") +
                                      std::to_string(arch)};
  for (const auto& [macro, value] : defines) options.push_back("-D" + macro + "=" + value);
  for (const auto& dir : include_dirs) options.push_back("-I" + dir.string());
  options.push_back("-I" R3_CUDA_INCLUDE_DIR);
  // CUDA 13 keeps cooperative_groups and libcu++ under include/cccl, on nvcc's default path.
  static const bool has_cccl = std::filesystem::is_directory(R3_CUDA_INCLUDE_DIR "/cccl");
  if (has_cccl) options.push_back("-I" R3_CUDA_INCLUDE_DIR "/cccl");
  for (const std::string& option : flags.nvrtc) options.push_back(option);
  if (flags.jit.max_registers)
    options.push_back("--maxrregcount=" + std::to_string(*flags.jit.max_registers));
  if (flags.jit.opt_level) {
    options.push_back("-Xptxas");
    options.push_back("-O" + std::to_string(*flags.jit.opt_level));
  }
  if (flags.jit.cache_mode) {
    options.push_back("-Xptxas");
    options.push_back("-dlcm=" + *flags.jit.cache_mode);
  }
  std::vector<const char*> pointers;
  for (const std::string& option : options) pointers.push_back(option.c_str());
  nvrtcResult status = nvrtcCompileProgram(raw, static_cast<int>(pointers.size()), pointers.data());
  std::size_t log_size = 0;
  if (nvrtcGetProgramLogSize(raw, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    std::string log(log_size, '\0');
    nvrtcGetProgramLog(raw, log.data());
    log.resize(log_size - 1);
    out.log = log;
  }
  if (status != NVRTC_SUCCESS) {
    if (out.log.empty()) out.log = std::string("NVRTC: ") + nvrtcGetErrorString(status);
    return fail("");
  }
  if (!lower) {
    out.function_name = entry;
  } else {
    const char* lowered = nullptr;
    if (nvrtcGetLoweredName(raw, entry.c_str(), &lowered) != NVRTC_SUCCESS || lowered == nullptr)
      return fail("the source defines no kernel '" + entry + "'");
    out.function_name = lowered;
  }
  std::size_t size = 0;
  nvrtcResult got = ptx ? nvrtcGetPTXSize(raw, &size) : nvrtcGetCUBINSize(raw, &size);
  if (got != NVRTC_SUCCESS || size == 0)
    return fail(std::string("NVRTC gave no code: ") + nvrtcGetErrorString(got));
  out.image.resize(size);
  got = ptx ? nvrtcGetPTX(raw, out.image.data()) : nvrtcGetCUBIN(raw, out.image.data());
  if (got != NVRTC_SUCCESS) return fail(std::string("NVRTC: ") + nvrtcGetErrorString(got));
  if (ptx && !out.image.empty() && out.image.back() == '\0') out.image.pop_back();
  out.ok = true;
  out.seconds = seconds_since(start);
  return out;
}

}  // namespace r3::replay::cuda
