// Device memory for CUDA replay: every recorded region at its recorded virtual address
// (cuMemAddressReserve at that address, cuMemCreate, cuMemMap, cuMemSetAccess), or, where the
// driver gives another address, there, with pointers into it rewritten (address_map.hpp).
#pragma once

#include <cuda.h>

#include <cstdint>
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

}  // namespace r3::replay::cuda
