// Checks of a tune.yaml that need the capture and the build, not only the YAML.
#include <filesystem>

#include "r3/config/tune_config.hpp"
#include "r3/error.hpp"
#include "r3/files.hpp"
#include "r3/version.hpp"

namespace r3::config {
namespace {

namespace fs = std::filesystem;

Backend backend_of_capture(const TuneConfig& config, const capture::CaptureReader& capture) {
  const std::string& recorded = capture.info().device.backend;
  if (recorded == "cuda") return Backend::cuda;
  if (recorded == "host") return Backend::host;
  config.fail("capture", "capture " + capture.path().string() + " was recorded with backend '" +
                             recorded + "', which this r3 cannot replay (known: cuda, host)");
}

}  // namespace

Backend check_against_capture(const TuneConfig& config, const capture::CaptureReader& capture) {
  Backend recorded = backend_of_capture(config, capture);
  if (config.backend != Backend::automatic && config.backend != Backend::simulate &&
      config.backend != recorded) {
    config.fail("backend", "backend '" + std::string(to_string(config.backend)) +
                               "' cannot replay this capture, which was recorded with '" +
                               std::string(to_string(recorded)) + "'");
  }
  for (std::size_t i = 0; i < config.kernels.size(); ++i) {
    const KernelSelection& selection = config.kernels[i];
    const std::string key = "kernels[" + std::to_string(i) + "]";
    const capture::Kernel* kernel = nullptr;
    try {
      kernel = &capture.kernel(selection.name);
    } catch (const UnknownKernelError& e) {
      config.fail(key + ".name", "kernel '" + selection.name + "' " + e.message());
    }
    if (kernel->launches.empty()) {
      config.fail(key + ".name", "kernel '" + selection.name + "' has no recorded launches");
    }
    for (std::size_t launch : selection.launches) {
      if (launch >= kernel->launches.size()) {
        config.fail(key + ".launches", "launch " + std::to_string(launch) + " of kernel '" +
                                           selection.name + "' was not recorded (it has " +
                                           std::to_string(kernel->launches.size()) + ")");
      }
    }
    std::error_code ec;
    if (!selection.source.empty()) {
      if (auto why = not_a_readable_file(selection.source))
        config.fail(key + ".source", "source file " + selection.source.string() + " " + *why);
    }
    for (const fs::path& dir : selection.include_dirs) {
      if (!fs::is_directory(dir, ec)) {
        config.fail(key + ".include_dirs",
                    "include directory " + dir.string() +
                        (fs::exists(dir, ec) ? " is not a directory" : " does not exist"));
      }
    }
    if (!selection.block.empty() && recorded == Backend::host) {
      config.fail(key + ".block", "kernel '" + selection.name +
                                      "' runs on the host backend, which has no launch shape");
    }
  }
  // Last, so that mistakes in the file are reported whatever this build contains.
  if (recorded == Backend::cuda && !build_has_cuda() && config.backend != Backend::simulate) {
    config.fail("backend",
                "the capture needs the CUDA backend, but this build of r3 has none "
                "(configured without CUDA: R3_ENABLE_CUDA=OFF or no CUDA Toolkit found)");
  }
  if (recorded == Backend::host && !build_has_llvm()) {
    config.fail("backend",
                "the host backend compiles with Clang/LLVM 19, which this build of r3 "
                "lacks (configured without LLVM)");
  }
  return recorded;
}

}  // namespace r3::config
