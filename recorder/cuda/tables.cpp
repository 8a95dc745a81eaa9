#include <algorithm>

#include "allocations.hpp"
#include "app_times.hpp"

namespace r3::record::cuda {

std::optional<Allocations::Range> Allocations::within(
    const std::map<std::uint64_t, std::uint64_t>& ranges, std::uint64_t address) {
  auto it = ranges.upper_bound(address);
  if (it == ranges.begin()) return std::nullopt;
  --it;
  if (address >= it->first + it->second) return std::nullopt;
  return *it;
}

void AppTimes::time(const std::string& name) {
  std::lock_guard lock(mutex_);
  timed_.insert(name);
}

void AppTimes::add(const char* name, const AppLaunch& launch) {
  if (name == nullptr) return;
  std::lock_guard lock(mutex_);
  if (!timed_.contains(std::string_view(name))) return;
  auto it = samples_.find(std::string_view(name));
  if (it == samples_.end()) it = samples_.emplace(name, std::vector<AppLaunch>{}).first;
  if (it->second.size() < kSamplesPerKernel) it->second.push_back(launch);
}

void AppTimes::written(WrittenLaunch launch) {
  std::lock_guard lock(mutex_);
  written_.push_back(std::move(launch));
}

std::size_t AppTimes::apply(const std::function<bool(const WrittenLaunch&)>& set) {
  std::lock_guard lock(mutex_);
  std::size_t timed = 0;
  for (WrittenLaunch& w : written_) {
    std::vector<double> others, own;
    if (auto it = samples_.find(w.name); it != samples_.end()) {
      for (const AppLaunch& a : it->second) {
        if (a.grid != w.launch.grid || a.block != w.launch.block) continue;
        (a.correlation == w.correlation ? own : others).push_back(a.us);
      }
    }
    std::vector<double>& samples = others.empty() ? own : others;
    if (samples.empty()) continue;
    std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
    w.launch.app_time_us = samples[samples.size() / 2];
    if (set(w)) ++timed;
  }
  return timed;
}

}  // namespace r3::record::cuda
