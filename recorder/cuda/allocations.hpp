// The CUDA recorder's view of the application's device memory: its live allocations (cuMemAlloc
// and friends, by base address), and its managed ones, which are not recorded. Not locked: the
// recorder calls it under its own mutex (injection.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace r3::record::cuda {

class Allocations {
 public:
  using Range = std::pair<std::uint64_t, std::uint64_t>;  // base, size

  void add(std::uint64_t base, std::uint64_t size) { live_[base] = size; }
  void add_managed(std::uint64_t base, std::uint64_t size) { managed_[base] = size; }
  // A freed allocation, of either kind.
  void remove(std::uint64_t base) {
    live_.erase(base);
    managed_.erase(base);
  }

  // The live allocation that holds `address`.
  std::optional<Range> containing(std::uint64_t address) const { return within(live_, address); }
  bool is_managed(std::uint64_t address) const { return within(managed_, address).has_value(); }
  // Every live allocation, base -> size, by address.
  const std::map<std::uint64_t, std::uint64_t>& live() const { return live_; }

 private:
  static std::optional<Range> within(const std::map<std::uint64_t, std::uint64_t>& ranges,
                                     std::uint64_t address);
  std::map<std::uint64_t, std::uint64_t> live_, managed_;
};

}  // namespace r3::record::cuda
