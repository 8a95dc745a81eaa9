// Memory for host replay: every recorded region at its recorded address (mmap with
// MAP_FIXED_NOREPLACE; shared, so that the candidate processes forked to run candidates work on
// it and this process sees what they wrote), or, where that address is taken, somewhere else, with the pointers into
// it rewritten (address_map.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "address_map.hpp"

namespace r3::replay {

class HostMemory {
 public:
  HostMemory() = default;
  ~HostMemory();
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;

  // Maps memory covering every span (whole pages; overlapping spans share a mapping).
  void place(const std::vector<Span>& spans);
  void clear();

  AddressMode mode() const { return map_.mode(); }
  std::string describe() const { return map_.describe(); }

  // Where the byte recorded at `address` lives now; `address` must lie in a placed span.
  std::byte* live(std::uint64_t address) const {
    return reinterpret_cast<std::byte*>(map_.live(address));
  }
  std::uint64_t translate(std::uint64_t value) const { return map_.translate(value); }
  void relocate_words(std::span<std::byte> bytes, std::uint64_t address) const {
    map_.relocate_words(bytes, address);
  }
  const AddressMap& map() const { return map_; }

 private:
  AddressMap map_;
};

}  // namespace r3::replay
