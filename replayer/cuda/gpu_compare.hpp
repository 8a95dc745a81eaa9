// Verification on the GPU: one comparison kernel per element type (compiled with NVRTC once
// per process, loaded once per context) that reduces a region to the number of elements out of
// tolerance, the largest error and the first bad index — the same rules as the host's
// compare_region (verify.hpp), without copying the region back.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <iterator>
#include <string>

#include "r3/replay/backend.hpp"

namespace r3::replay::cuda {

class GpuCompare {
 public:
  GpuCompare() = default;
  ~GpuCompare();
  GpuCompare(const GpuCompare&) = delete;
  GpuCompare& operator=(const GpuCompare&) = delete;

  // Compares `count` whole elements of `type` at `actual` with those at `expected` (device
  // addresses aligned to the element size) and fills mismatches, max_error and first_bad_index
  // of `check`; with `before` (else 0), what the region held before the launch, also changed
  // and left_unchanged. Loads the kernels into the current context on first use.
  void compare(CUdeviceptr actual, CUdeviceptr expected, CUdeviceptr before, std::uint64_t count,
               capture::ElementType type, const config::Tolerance& tolerance, CUstream stream,
               RegionCheck& check);

 private:
  void load();
  CUmodule module_ = nullptr;
  CUfunction functions_[std::size(capture::kAllElementTypes)] = {};  // by element type
  CUdeviceptr result_ = 0;                                           // five 64-bit words
};

// The CUDA source of the comparison kernels (for the NVRTC check in the tests).
const std::string& compare_kernels_source();

}  // namespace r3::replay::cuda
