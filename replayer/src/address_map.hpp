// Where recorded memory lives during a replay: a sorted list of mappings (recorded range → live
// address), shared by the host backend (mmap) and the CUDA backend (VMM). A mapping that could
// not be placed at its recorded address is "moved"; pointers into it, found as aligned
// pointer-sized words in argument buffers and region contents, are rewritten.
//
// Which words are pointers is a guess, and a wrong guess corrupts data: two ints side by side
// (a CSR row index of 32533 next to one of 32538 is 0x7f1a00007f15) read as an address of the
// recording's 0x7f1a... mappings. So a word of region contents is taken for a pointer only when
// it points into a recorded region itself (its first byte to one past its last), not just into
// the granules around it: the recorder captured every allocation a word pointed into, so a word
// that points into none was never an address the application followed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "r3/capture.hpp"
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
  // The recorded regions the mappings hold (what place() was given), the only targets
  // relocate_words rewrites pointers to.
  void set_regions(const std::vector<Span>& regions);
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
  // address space (bytes[0] was recorded at `address`) and points into a recorded region of a
  // moved mapping (set_regions).
  void relocate_words(std::span<std::byte> bytes, std::uint64_t address) const;
  // Rewrites the pointer-sized words of a launch's argument buffer that point into a moved
  // mapping, its guard and rounding bytes included (an argument may point just before an array).
  // Only words that lie wholly inside one parameter of 8 bytes or more that is not a
  // floating-point number are considered: two int parameters side by side are not an address.
  // Without parameter information (`params` empty) every aligned word is.
  void relocate_arguments(std::span<std::byte> args,
                          const std::vector<capture::Param>& params) const;

 private:
  const Mapping* find(std::uint64_t recorded) const;
  bool in_region(std::uint64_t recorded) const;
  void relocate_word(std::span<std::byte> bytes, std::size_t offset) const;
  std::vector<Mapping> mappings_;  // sorted by recorded address
  // The recorded regions merged where they overlap or touch: sorted [begin, end) ranges.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> regions_;
  bool any_moved_ = false;
};

}  // namespace r3::replay
