// Memory for host replay: every recorded region at its recorded address (mmap with
// MAP_FIXED_NOREPLACE), or, where that address is taken, somewhere else, with the pointers into
// it rewritten.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "r3/replay/backend.hpp"

namespace r3::replay {

struct Span {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
};

class HostMemory {
 public:
  HostMemory() = default;
  ~HostMemory();
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;

  // Maps memory covering every span (whole pages; overlapping spans share a mapping).
  void place(const std::vector<Span>& spans);
  void clear();

  AddressMode mode() const;
  std::string describe() const;  // "same address (2 mappings, 2.0 MiB)"

  // Where the byte recorded at `address` lives now; `address` must lie in a placed span.
  std::byte* live(std::uint64_t address) const;
  // A recorded pointer value translated to where its target lives now; values that point into
  // no moved mapping are returned unchanged.
  std::uint64_t translate(std::uint64_t value) const;
  // Rewrites each pointer-sized word of `bytes` that lies on an 8-byte boundary of the recorded
  // address space (bytes[0] was recorded at `address`) and points into a moved mapping.
  void relocate_words(std::span<std::byte> bytes, std::uint64_t address) const;

 private:
  struct Mapping {
    std::uint64_t recorded = 0;
    std::uint64_t length = 0;
    std::byte* live = nullptr;
    bool moved() const { return reinterpret_cast<std::uint64_t>(live) != recorded; }
  };
  const Mapping* find(std::uint64_t recorded) const;
  std::vector<Mapping> mappings_;  // sorted by recorded address
  bool any_moved_ = false;
};

}  // namespace r3::replay
