#include "device_memory.hpp"

#include <algorithm>

#include "driver.hpp"
#include "r3/inspect.hpp"
#include "r3/log.hpp"

namespace r3::replay::cuda {

DeviceMemory::~DeviceMemory() {
  try {
    clear();
  } catch (...) {  // a destructor must not throw; the context may already be gone
  }
}

void DeviceMemory::release(const Mapping& mapping) {
  const Driver& d = driver();
  if (mapping.mapped) d.cuMemUnmap(mapping.address, mapping.length);
  if (mapping.handle) d.cuMemRelease(mapping.handle);
  if (mapping.address) d.cuMemAddressFree(mapping.address, mapping.length);
}

void DeviceMemory::clear() {
  if (!mappings_.empty() && !Device::instance().lost()) {
    for (const Mapping& mapping : mappings_) release(mapping);
  }
  mappings_.clear();
  map_.clear();
}

void DeviceMemory::place(const std::vector<Span>& spans) {
  clear();
  const Driver& d = driver();
  Device& device = Device::instance();
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device.handle();
  std::size_t granularity = 0;
  R3_CU(d.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  // One granule of zeroed guard memory on each side of every recorded span: kernels that read
  // just before or after their arrays (boundary cells, as Rodinia's srad does at its first row)
  // read neighbouring allocations in the application, and must not fault in the replay. Writes
  // there are still caught: the guard is among the mapped bytes no region covers.
  std::vector<Span> guarded;
  for (const Span& span : spans) {
    if (span.size == 0) continue;
    const std::uint64_t before = std::min<std::uint64_t>(span.address, granularity);
    guarded.push_back(Span{span.address - before, span.size + before + granularity});
  }
  try {
    for (const auto& [begin, end] : merge_ranges(guarded, granularity)) {
      Mapping mapping;
      mapping.length = static_cast<std::size_t>(end - begin);
      R3_CU(d.cuMemAddressReserve(&mapping.address, mapping.length, 0, begin, 0));
      mappings_.push_back(mapping);  // from here on, clear() releases it
      Mapping& m = mappings_.back();
      R3_CU(d.cuMemCreate(&m.handle, m.length, &prop, 0));
      R3_CU(d.cuMemMap(m.address, m.length, 0, m.handle, 0));
      m.mapped = true;
      R3_CU(d.cuMemSetAccess(m.address, m.length, &access, 1));
      R3_CU(d.cuMemsetD8(m.address, 0, m.length));
      // The driver takes the address as a hint: another one means this mapping moved.
      if (m.address != begin)
        log::debug("recorded range 0x", std::hex, begin, "+0x", m.length, " placed at 0x",
                   m.address, std::dec);
      map_.add(begin, m.length, m.address);
    }
    map_.set_regions(spans);
  } catch (const CudaError& e) {
    std::uint64_t total = 0;
    for (const auto& [begin, end] : merge_ranges(guarded, granularity)) total += end - begin;
    clear();
    throw IoError(e.api(), "cannot place the recorded regions (" + format_bytes(total) +
                               ") on the GPU: " + e.message());
  }
}

}  // namespace r3::replay::cuda
