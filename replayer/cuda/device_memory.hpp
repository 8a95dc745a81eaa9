// Device memory for CUDA replay: every recorded region at its recorded virtual address
// (cuMemAddressReserve at that address, cuMemCreate, cuMemMap, cuMemSetAccess), or, where the
// driver gives another address, there, with pointers into it rewritten (address_map.hpp).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "address_map.hpp"

namespace r3::replay::cuda {

class DeviceMemory {
 public:
  DeviceMemory() = default;
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // Maps zeroed memory covering every span (whole allocation granules, 2 MiB on current GPUs)
  // in the current context.
  void place(const std::vector<Span>& spans);
  // Unmaps and frees what place() made (nothing once the context is lost).
  void clear();

  const AddressMap& map() const { return map_; }
  CUdeviceptr live(std::uint64_t address) const { return map_.live(address); }

 private:
  struct Mapping {
    CUdeviceptr address = 0;
    std::size_t length = 0;
    CUmemGenericAllocationHandle handle = 0;
    bool mapped = false;
  };
  void release(const Mapping& mapping);
  std::vector<Mapping> mappings_;
  AddressMap map_;
};

// Device memory kernels may read but not write (read-only access through the VMM API): the
// pristine contents that restores copy from and verification compares with. A candidate that
// writes out of bounds into one faults, and is failed for it, instead of changing what every
// later candidate on the same evaluator is restored from and compared with.
class ReadOnlyBuffer {
 public:
  // Allocates `size` bytes (rounded up to the allocation granularity) and fills them from
  // `host`. Returns null when device memory is short; throws CudaError for anything else.
  static std::unique_ptr<ReadOnlyBuffer> create(const void* host, std::size_t size);
  ~ReadOnlyBuffer();  // releases it (nothing once the context is lost)
  ReadOnlyBuffer(const ReadOnlyBuffer&) = delete;
  ReadOnlyBuffer& operator=(const ReadOnlyBuffer&) = delete;

  CUdeviceptr address() const { return address_; }
  // Copies `host` in again (writable for the copy, read-only again after it).
  void fill(const void* host, std::size_t size);

 private:
  ReadOnlyBuffer() = default;
  void set_access(CUmemAccess_flags flags);
  CUdeviceptr address_ = 0;
  std::size_t length_ = 0;
  CUmemGenericAllocationHandle handle_ = 0;
  bool mapped_ = false;
};

}  // namespace r3::replay::cuda
