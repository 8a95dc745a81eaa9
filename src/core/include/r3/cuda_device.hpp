// A CUDA device's facts as a capture records them (capture::DeviceInfo), found the same way by
// the CUDA recorder, which links the driver, and the CUDA replay backend, which opens it at run
// time: each hands over its own way of asking the driver. No CUDA header here; the attribute
// values below are checked against cuda.h where it is included (static_assert).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "r3/capture.hpp"

namespace r3 {

// The CU_DEVICE_ATTRIBUTE_* values the facts are read with.
namespace cuda_attribute {
inline constexpr int multiprocessor_count = 16;
inline constexpr int l2_cache_size = 38;
inline constexpr int compute_capability_major = 75;
inline constexpr int compute_capability_minor = 76;
}  // namespace cuda_attribute

// What the facts are read from, as the caller's driver answers.
struct CudaDriverAnswers {
  std::function<int(int attribute)> attribute;  // cuDeviceGetAttribute; 0 when it fails
  std::string name;                             // cuDeviceGetName
  std::uint64_t memory_bytes = 0;               // cuDeviceTotalMem; 0: unknown
  int driver_version = 0;                       // cuDriverGetVersion (13000); 0: unknown
  int toolkit_version = 0;                      // CUDA_VERSION of the headers built with
};

capture::DeviceInfo cuda_device_info(const CudaDriverAnswers& answers);

// "13.0" for 13000 (CUDA's encoding of versions); "" for 0.
std::string cuda_version_text(int version);

}  // namespace r3
