// Verification on the GPU: one comparison kernel per element type (compiled with NVRTC once
// per process, loaded once per context) that reduces a region to the number of elements out of
// tolerance, the largest error and the first bad index — the same rules as the host's
// compare_region (verify.hpp), without copying the region back.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <vector>

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
               capture::ElementType type, const replay::Tolerance& tolerance, CUstream stream,
               RegionCheck& check);

  // A hash of `size` bytes at `bytes` (8-aligned) keyed with a secret of this object (random,
  // never in device memory): r3 hashes its reference copies when it uploads them and again
  // after a candidate ran, and a kernel that changed one (there is no memory protection inside
  // a context) cannot make the sums agree without the key.
  std::uint64_t keyed_hash(CUdeviceptr bytes, std::uint64_t size, CUstream stream);

  // The keyed hashes of several buffers (address, size), in their order: one launch each and a
  // single synchronisation for all of them (r3 checks every reference copy after each
  // candidate, and a round trip to the GPU per copy cost more than the hashing).
  struct Buffer {
    CUdeviceptr bytes = 0;
    std::uint64_t size = 0;
  };
  std::vector<std::uint64_t> keyed_hashes(std::span<const Buffer> buffers, CUstream stream);

 private:
  static constexpr int kResultWords = 5;  // compare's
  void load();
  CUdeviceptr hashes_ = 0;  // keyed_hashes' sums, hash_words_ 64-bit words
  std::size_t hash_words_ = 0;
  CUmodule module_ = nullptr;
  CUfunction functions_[std::size(capture::kAllElementTypes)] = {};  // by element type
  CUfunction keyed_hash_ = nullptr;
  CUdeviceptr result_ = 0;  // kResultWords 64-bit words
  std::uint64_t key_ = (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
};

// The CUDA source of the comparison kernels (for the NVRTC check in the tests).
const std::string& compare_kernels_source();

}  // namespace r3::replay::cuda
