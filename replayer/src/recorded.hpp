// What every backend takes from a capture the same way: the launches to prepare, region
// contents with their pointers relocated, the images recorded with a kernel; and how results are
// summarised and explained.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "address_map.hpp"
#include "r3/capture.hpp"
#include "r3/elapsed.hpp"
#include "r3/replay/backend.hpp"

namespace r3::replay {

using Bytes = std::shared_ptr<const std::vector<std::byte>>;

// Throws unless `capture` was recorded with `backend` ("host", "cuda"); `who` names the backend
// that asks and what it replays, e.g. "the host backend replays captures recorded on the host".
void require_backend(const capture::CaptureReader& capture, std::string_view backend,
                     std::string_view who);

// `wanted` checked against the kernel's launches; empty: all of them.
std::vector<std::size_t> resolve_launches(const capture::Kernel& kernel,
                                          std::vector<std::size_t> wanted);

// Every span a backend must place for the launches: the regions (of kind `kind`, or all) in
// their prologue, globals and epilogue tables.
std::vector<Span> region_spans(const capture::Kernel& kernel,
                               const std::vector<std::size_t>& launches,
                               std::optional<capture::RegionKind> kind = std::nullopt);

// Bytes this process can still use: MemAvailable + SwapFree, and no more than RLIMIT_AS leaves.
std::uint64_t available_host_memory();

// Throws Error (naming the capture, kernel, launch and region) when a region of the launches is
// larger than `available` bytes of `memory` ("host memory", "device memory of H100"), or when
// all they need there (`needed` of each region: what one region costs, e.g. its span plus its
// copies) is: before anything is allocated, instead of a bad_alloc that names nothing.
void check_fits_in_memory(const capture::CaptureReader& capture, const capture::Kernel& kernel,
                          const std::vector<std::size_t>& launches, std::uint64_t available,
                          std::string_view memory, std::uint64_t copies_per_region);

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

// Each region a replay of `launch` restores or checks, once: a prologue or global region with
// its epilogue entry when the launch changed it (`after`), then the epilogue regions the launch
// did not read (`before` null).
struct RegionStates {
  const capture::Region* region = nullptr;  // as recorded first (prologue, else epilogue)
  const capture::Region* before = nullptr;  // prologue or global entry
  const capture::Region* after = nullptr;   // epilogue entry
};
std::vector<RegionStates> region_states(const capture::Launch& launch);

// Verifies every region of a prepared launch: changed ones (`after` set) against the epilogue
// with the tolerance tune.yaml gives them, all others bitwise against the prologue.
// `compare(region, expect_change, tolerance)` returns the check of one region; this fills its
// name, address and expected_to_change, and `out`'s regions, verified flag and verify time.
template <class PreparedRegion, class Compare>
bool verify_regions(const std::vector<PreparedRegion>& regions, const RunOptions& options,
                    LaunchResult& out, Compare&& compare) {
  const auto start = std::chrono::steady_clock::now();
  out.regions.clear();
  bool passed = true;
  for (const PreparedRegion& region : regions) {
    const bool changes = region.after != nullptr;
    const capture::ElementType type =
        options.verify.type_of(region.recorded.name, region.recorded.element_type);
    const replay::Tolerance tolerance = changes
                                            ? options.verify.for_region(region.recorded.name, type)
                                            : replay::Tolerance::exact();
    RegionCheck check = compare(region, changes, tolerance, type);
    check.name = region.recorded.name;
    check.address = region.recorded.address;
    check.expected_to_change = changes;
    passed = passed && check.passed;
    out.regions.push_back(std::move(check));
  }
  out.verified = passed;
  out.verify_seconds = seconds_since(start);
  return passed;
}

// Mapped bytes that no recorded region of the launches covers: the padding up to the mapping
// granularity and the gaps between allocations. Placement leaves them zero, so anything else
// found there after a run was written out of bounds.
struct UnrecordedSpan {
  std::uint64_t address = 0;  // recorded address
  std::uint64_t size = 0;
  std::string after;  // the region these bytes follow; "" at the start of a mapping
};
std::vector<UnrecordedSpan> unrecorded_spans(const capture::Kernel& kernel,
                                             const std::vector<std::size_t>& launches,
                                             const AddressMap& map);

// The failed check of an unrecorded span in which `written` bytes are not zero, the first at
// byte `first` of the span.
RegionCheck out_of_bounds_check(const UnrecordedSpan& span, std::uint64_t written,
                                std::int64_t first);

// Compiled variants by the backend's cache key, shared by compile() calls on several threads.
// At most `capacity` of them: the least recently used goes first (compiled again if asked for),
// so that thousands of candidates do not pile up their code in memory.
class CompiledCache {
 public:
  explicit CompiledCache(std::size_t capacity = 256) : capacity_(capacity) {}
  // The cached result, marked as coming from the cache (no compile time).
  std::optional<Compiled> find(const Hash128& key) const;
  void put(const Hash128& key, const Compiled& compiled);
  void clear();
  std::size_t size() const;

 private:
  struct Entry {
    Compiled compiled;
    mutable std::uint64_t last_use = 0;
  };
  std::size_t capacity_;
  mutable std::mutex mutex_;  // guards compiled_ and uses_
  std::map<Hash128, Entry> compiled_;
  mutable std::uint64_t uses_ = 0;
};

// The result of running a variant that did not compile: its diagnostics as a compile error.
// Null when it compiled.
std::optional<RunResult> not_compiled(const Compiled& compiled);

// The kernel's recorded image of `kind` (capture::kImage*) as bytes in a string; "" when none.
std::string recorded_image(const capture::CaptureReader& capture, const capture::Kernel& kernel,
                           std::string_view kind);

TimeStats summarise(std::vector<double> samples);

// "region 'out' differs from the recorded result (3 of 4096 elements, first at index 17)"
std::string first_failure(const LaunchResult& launch);

}  // namespace r3::replay
