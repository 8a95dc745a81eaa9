// What every backend takes from a capture the same way: the launches to prepare, region
// contents with their pointers relocated, the images recorded with a kernel; and how results are
// summarised and explained.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "address_map.hpp"
#include "r3/capture.hpp"
#include "r3/replay/backend.hpp"

namespace r3::replay {

using Bytes = std::shared_ptr<const std::vector<std::byte>>;

// `wanted` checked against the kernel's launches; empty: all of them.
std::vector<std::size_t> resolve_launches(const capture::Kernel& kernel,
                                          std::vector<std::size_t> wanted);

// Every span a backend must place for the launches: the regions (of kind `kind`, or all) in
// their prologue, globals and epilogue tables.
std::vector<Span> region_spans(const capture::Kernel& kernel,
                               const std::vector<std::size_t>& launches,
                               std::optional<capture::RegionKind> kind = std::nullopt);

// Region contents as a replay needs them: read once per (content, address), with the pointers
// into moved mappings rewritten.
class RelocatedContents {
 public:
  RelocatedContents(const capture::CaptureReader& capture, const AddressMap& map)
      : capture_(capture), map_(map) {}
  Bytes get(const capture::Region& region);

 private:
  const capture::CaptureReader& capture_;
  const AddressMap& map_;
  std::map<std::pair<Hash128, std::uint64_t>, Bytes> contents_;
};

// The kernel's recorded image of `kind` (capture::kImage*) as bytes in a string; "" when none.
std::string recorded_image(const capture::CaptureReader& capture, const capture::Kernel& kernel,
                           std::string_view kind);

TimeStats summarise(std::vector<double> samples);

// "region 'out' differs from the recorded result (3 of 4096 elements, first at index 17)"
std::string first_failure(const LaunchResult& launch);

}  // namespace r3::replay
