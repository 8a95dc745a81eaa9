// Where recorded memory lives during a replay: a sorted list of mappings (recorded range → live
// address), shared by the host backend (mmap) and the CUDA backend (VMM). A mapping that could
// not be placed at its recorded address is "moved"; pointers into it, found as aligned
// pointer-sized words in argument buffers and region contents, are rewritten.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "r3/replay/backend.hpp"

namespace r3::replay {

struct Span {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
};

// The spans rounded out to `granularity` (a power of two) and merged where they overlap or
// touch: the [begin, end) ranges to map, sorted. Throws r3::Error on a span that wraps around.
std::vector<std::pair<std::uint64_t, std::uint64_t>> merge_ranges(const std::vector<Span>& spans,
                                                                  std::uint64_t granularity);

class AddressMap {
 public:
  struct Mapping {
    std::uint64_t recorded = 0;
    std::uint64_t length = 0;
    std::uint64_t live = 0;
    bool moved() const { return live != recorded; }
  };

  // Mappings must be added in increasing recorded order and must not overlap.
  void add(std::uint64_t recorded, std::uint64_t length, std::uint64_t live);
  void clear();
  const std::vector<Mapping>& mappings() const { return mappings_; }
  bool empty() const { return mappings_.empty(); }

  AddressMode mode() const;
  // "same address (2 mappings, 2.0 MiB)" / "relocated (3 mappings, 1 moved, 6.0 MiB)"
  std::string describe() const;

  // Where the byte recorded at `address` lives now; throws when no mapping holds it.
  std::uint64_t live(std::uint64_t address) const;
  // A recorded pointer value translated to where its target lives now; values that point into
  // no moved mapping are returned unchanged.
  std::uint64_t translate(std::uint64_t value) const;
  // Rewrites each pointer-sized word of `bytes` that lies on an 8-byte boundary of the recorded
  // address space (bytes[0] was recorded at `address`) and points into a moved mapping.
  void relocate_words(std::span<std::byte> bytes, std::uint64_t address) const;

 private:
  const Mapping* find(std::uint64_t recorded) const;
  std::vector<Mapping> mappings_;  // sorted by recorded address
  bool any_moved_ = false;
};

}  // namespace r3::replay
