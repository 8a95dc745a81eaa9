#include "recorded.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <set>

#include "r3/error.hpp"
#include "verify.hpp"

namespace r3::replay {

void require_backend(const capture::CaptureReader& capture, std::string_view backend,
                     std::string_view who) {
  const std::string& recorded = capture.info().device.backend;
  if (recorded != backend)
    throw Error(std::string(who) + "; this one was recorded with backend '" + recorded + "'",
                in_file(capture.path().string()));
}

std::vector<std::size_t> resolve_launches(const capture::Kernel& kernel,
                                          std::vector<std::size_t> wanted) {
  if (wanted.empty()) {
    for (std::size_t i = 0; i < kernel.launches.size(); ++i) wanted.push_back(i);
  }
  for (std::size_t index : wanted) {
    if (index >= kernel.launches.size())
      throw Error("kernel '" + kernel.name + "' has no recorded launch " + std::to_string(index) +
                  " (it has " + std::to_string(kernel.launches.size()) + ")");
  }
  return wanted;
}

std::vector<Span> region_spans(const capture::Kernel& kernel,
                               const std::vector<std::size_t>& launches,
                               std::optional<capture::RegionKind> kind) {
  std::vector<Span> spans;
  for (std::size_t index : launches) {
    const capture::Launch& launch = kernel.launches.at(index);
    for (const auto* table : {&launch.prologue, &launch.globals, &launch.epilogue}) {
      for (const capture::Region& region : *table) {
        if (!kind || region.kind == *kind) spans.push_back({region.address, region.size});
      }
    }
  }
  return spans;
}

std::uint64_t available_host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0, available = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:" || key == "SwapFree:") available += kib * 1024;
    meminfo.ignore(64, '\n');
  }
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    available = std::min<std::uint64_t>(available, limit.rlim_cur);
  return available == 0 ? std::numeric_limits<std::uint64_t>::max() : available;
}

void check_fits_in_memory(const capture::CaptureReader& capture, const capture::Kernel& kernel,
                          const std::vector<std::size_t>& launches, std::uint64_t available,
                          std::string_view memory, std::uint64_t copies_per_region) {
  auto gib = [](std::uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", double(bytes) / (1ull << 30));
    return std::string(text);
  };
  ErrorContext context = in_file(capture.path().string());
  context.kernel = kernel.name;
  std::uint64_t total = 0;
  std::set<std::pair<capture::RegionKind, std::uint64_t>> counted;
  for (std::size_t index : launches) {
    const capture::Launch& launch = kernel.launches.at(index);
    for (const auto* table : {&launch.prologue, &launch.globals, &launch.epilogue}) {
      for (const capture::Region& region : *table) {
        const std::uint64_t need =
            region.size > available / copies_per_region ? available + 1 : region.size * copies_per_region;
        if (need > available)
          throw Error("launch " + std::to_string(index) + ", region '" + region.name + "' holds " +
                          std::to_string(region.size) + " bytes (" + gib(region.size) +
                          "), more than the " + gib(available) + " of " + std::string(memory) +
                          " this process can use",
                      context);
        if (counted.insert({region.kind, region.address}).second) total += need;
      }
    }
  }
  if (total > available)
    throw Error("the replayed launches need " + gib(total) + " of " + std::string(memory) +
                    " (their regions and the copies kept to restore and check them), more than "
                    "the " + gib(available) + " this process can use; replay fewer launches "
                    "(tune.yaml kernels[].launches, r3 replay --launch)",
                context);
}

std::vector<RegionStates> region_states(const capture::Launch& launch) {
  std::vector<RegionStates> states;
  std::map<std::pair<capture::RegionKind, std::uint64_t>, std::size_t> read;
  for (const auto* table : {&launch.prologue, &launch.globals}) {
    for (const capture::Region& region : *table) {
      read[{region.kind, region.address}] = states.size();
      states.push_back({&region, &region, nullptr});
    }
  }
  for (const capture::Region& region : launch.epilogue) {
    auto it = read.find({region.kind, region.address});
    if (it == read.end())
      states.push_back({&region, nullptr, &region});
    else
      states[it->second].after = &region;
  }
  return states;
}

Bytes RelocatedContents::get(const capture::Region& region) {
  auto key = std::make_pair(region.content, region.address);
  if (auto it = contents_.find(key); it != contents_.end()) return it->second;
  auto bytes = std::make_shared<std::vector<std::byte>>(capture_.read_content(region.content));
  map_.relocate_words(*bytes, region.address);
  return contents_.emplace(key, std::move(bytes)).first->second;
}

std::string recorded_image(const capture::CaptureReader& capture, const capture::Kernel& kernel,
                           std::string_view kind) {
  auto it = kernel.images.find(std::string(kind));
  if (it == kernel.images.end()) return "";
  std::vector<std::byte> bytes = capture.read_content(it->second);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

TimeStats summarise(std::vector<double> samples) {
  TimeStats stats;
  stats.samples = samples;
  if (samples.empty()) return stats;
  std::sort(samples.begin(), samples.end());
  stats.min = samples.front();
  stats.max = samples.back();
  std::size_t n = samples.size();
  stats.median = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  return stats;
}

std::optional<Compiled> CompiledCache::find(const Hash128& key) const {
  std::lock_guard lock(mutex_);
  auto it = compiled_.find(key);
  if (it == compiled_.end()) return std::nullopt;
  it->second.last_use = ++uses_;
  Compiled cached = it->second.compiled;
  cached.from_cache = true;
  cached.seconds = 0;
  return cached;
}

void CompiledCache::put(const Hash128& key, const Compiled& compiled) {
  std::lock_guard lock(mutex_);
  compiled_.insert_or_assign(key, Entry{compiled, ++uses_});
  while (compiled_.size() > capacity_) {
    auto oldest = compiled_.begin();
    for (auto it = compiled_.begin(); it != compiled_.end(); ++it)
      if (it->second.last_use < oldest->second.last_use) oldest = it;
    compiled_.erase(oldest);
  }
}

void CompiledCache::clear() {
  std::lock_guard lock(mutex_);
  compiled_.clear();
}

std::size_t CompiledCache::size() const {
  std::lock_guard lock(mutex_);
  return compiled_.size();
}

std::optional<RunResult> not_compiled(const Compiled& compiled) {
  if (compiled.ok && compiled.code) return std::nullopt;
  RunResult result;
  result.outcome = Outcome::compile_error;
  result.message = compiled.diagnostics;
  return result;
}

std::vector<UnrecordedSpan> unrecorded_spans(const capture::Kernel& kernel,
                                             const std::vector<std::size_t>& launches,
                                             const AddressMap& map) {
  std::map<std::uint64_t, std::pair<std::uint64_t, std::string>> regions;  // begin -> end, name
  for (std::size_t index : launches) {
    const capture::Launch& launch = kernel.launches.at(index);
    for (const auto* table : {&launch.prologue, &launch.globals, &launch.epilogue}) {
      for (const capture::Region& region : *table) {
        auto& [end, name] = regions[region.address];
        if (region.address + region.size >= end) {
          end = region.address + region.size;
          name = region.name;
        }
      }
    }
  }
  std::vector<UnrecordedSpan> spans;
  for (const AddressMap::Mapping& mapping : map.mappings()) {
    std::uint64_t at = mapping.recorded;
    const std::uint64_t end = mapping.recorded + mapping.length;
    std::string after;
    for (auto it = regions.lower_bound(mapping.recorded); it != regions.end() && it->first < end;
         ++it) {
      const auto& [region_end, name] = it->second;
      if (region_end <= at) continue;
      if (it->first > at) spans.push_back({at, it->first - at, after});
      at = std::min(region_end, end);
      after = name;
    }
    if (at < end) spans.push_back({at, end - at, after});
  }
  return spans;
}

RegionCheck out_of_bounds_check(const UnrecordedSpan& span, std::uint64_t written,
                                std::int64_t first) {
  RegionCheck check;
  check.name = span.after;
  check.address = span.address;
  check.size = span.size;
  check.out_of_bounds = true;
  check.passed = false;
  check.elements = span.size;
  check.mismatches = written;
  check.first_bad_index = first;
  check.tolerance = "bitwise";
  return check;
}

std::string first_failure(const LaunchResult& launch) {
  for (const RegionCheck& check : launch.regions) {
    if (check.passed) continue;
    if (check.out_of_bounds)
      return "out-of-bounds write: " + std::to_string(check.mismatches) +
             " bytes changed in memory that no recorded region covers, the first at byte " +
             std::to_string(check.first_bad_index) + " " +
             (check.name.empty() ? "of a mapping, before any region"
                                 : "past the end of region '" + check.name + "'");
    if (check.mismatches == 0 && left_work_undone(check))
      return "region '" + check.name + "': " + std::to_string(check.left_unchanged) + " of the " +
             std::to_string(check.changed) +
             " elements the recorded launch changed were left as they were (more than 1%: work "
             "skipped, though within tolerance)";
    return "region '" + check.name + "' " +
           (check.expected_to_change ? "differs from the recorded result"
                                     : "was modified but must stay untouched") +
           " (" + std::to_string(check.mismatches) + " of " + std::to_string(check.elements) +
           " elements, first at index " + std::to_string(check.first_bad_index) + ")";
  }
  return "verification failed";
}

}  // namespace r3::replay
