#include "r3/cuda_device.hpp"

namespace r3 {

std::string cuda_version_text(int version) {
  if (version <= 0) return "";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

capture::DeviceInfo cuda_device_info(const CudaDriverAnswers& answers) {
  capture::DeviceInfo d;
  d.backend = "cuda";
  d.name = answers.name;
  d.compute_capability_major = answers.attribute(cuda_attribute::compute_capability_major);
  d.compute_capability_minor = answers.attribute(cuda_attribute::compute_capability_minor);
  d.architecture =
      "sm_" + std::to_string(d.compute_capability_major * 10 + d.compute_capability_minor);
  d.multiprocessor_count = answers.attribute(cuda_attribute::multiprocessor_count);
  d.l2_cache_bytes = static_cast<std::uint64_t>(answers.attribute(cuda_attribute::l2_cache_size));
  d.memory_bytes = answers.memory_bytes;
  d.driver_version = cuda_version_text(answers.driver_version);
  d.toolkit_version = cuda_version_text(answers.toolkit_version);
  return d;
}

}  // namespace r3
