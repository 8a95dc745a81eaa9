#include "address_map.hpp"

#include <algorithm>
#include <cstring>

#include "r3/error.hpp"
#include "r3/inspect.hpp"

namespace r3::replay {

std::vector<std::pair<std::uint64_t, std::uint64_t>> merge_ranges(const std::vector<Span>& spans,
                                                                  std::uint64_t granularity) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const Span& span : spans) {
    if (span.size == 0) continue;
    std::uint64_t begin = span.address / granularity * granularity;
    std::uint64_t end = (span.address + span.size + granularity - 1) / granularity * granularity;
    if (end <= begin) throw Error("a recorded region wraps around the address space");
    ranges.emplace_back(begin, end);
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
  for (const auto& range : ranges) {
    if (!merged.empty() && range.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, range.second);
    } else {
      merged.push_back(range);
    }
  }
  return merged;
}

void AddressMap::add(std::uint64_t recorded, std::uint64_t length, std::uint64_t live) {
  if (!mappings_.empty() && recorded < mappings_.back().recorded + mappings_.back().length)
    throw Error("internal: address mappings added out of order");
  mappings_.push_back({recorded, length, live});
  any_moved_ = any_moved_ || mappings_.back().moved();
}

void AddressMap::set_regions(const std::vector<Span>& regions) {
  regions_ = merge_ranges(regions, 1);
}

void AddressMap::clear() {
  mappings_.clear();
  regions_.clear();
  any_moved_ = false;
}

AddressMode AddressMap::mode() const {
  return any_moved_ ? AddressMode::relocated : AddressMode::same_address;
}

std::string AddressMap::describe() const {
  std::uint64_t bytes = 0;
  std::size_t moved = 0;
  for (const Mapping& mapping : mappings_) {
    bytes += mapping.length;
    moved += mapping.moved() ? 1 : 0;
  }
  std::string out(to_string(mode()));
  out += " (" + std::to_string(mappings_.size()) + " mapping" + (mappings_.size() == 1 ? "" : "s");
  if (moved > 0) out += ", " + std::to_string(moved) + " moved";
  return out + ", " + format_bytes(bytes) + ")";
}

const AddressMap::Mapping* AddressMap::find(std::uint64_t recorded) const {
  auto it =
      std::upper_bound(mappings_.begin(), mappings_.end(), recorded,
                       [](std::uint64_t value, const Mapping& m) { return value < m.recorded; });
  if (it == mappings_.begin()) return nullptr;
  --it;
  // One past the end still belongs to the mapping: C allows such pointers.
  return recorded <= it->recorded + it->length ? &*it : nullptr;
}

std::uint64_t AddressMap::live(std::uint64_t address) const {
  const Mapping* mapping = find(address);
  if (mapping == nullptr) throw Error("internal: address outside every placed region");
  return mapping->live + (address - mapping->recorded);
}

std::uint64_t AddressMap::translate(std::uint64_t value) const {
  if (!any_moved_) return value;
  const Mapping* mapping = find(value);
  if (mapping == nullptr || !mapping->moved()) return value;
  return mapping->live + (value - mapping->recorded);
}

bool AddressMap::in_region(std::uint64_t recorded) const {
  auto it =
      std::upper_bound(regions_.begin(), regions_.end(), recorded,
                       [](std::uint64_t value, const std::pair<std::uint64_t, std::uint64_t>& r) {
                         return value < r.first;
                       });
  if (it == regions_.begin()) return false;
  --it;
  return recorded <= it->second;  // one past the end too
}

void AddressMap::relocate_word(std::span<std::byte> bytes, std::size_t offset) const {
  std::uint64_t word;
  std::memcpy(&word, bytes.data() + offset, 8);
  const std::uint64_t moved = translate(word);
  if (moved != word) std::memcpy(bytes.data() + offset, &moved, 8);
}

void AddressMap::relocate_words(std::span<std::byte> bytes, std::uint64_t address) const {
  if (!any_moved_ || regions_.empty()) return;
  const std::uint64_t lowest = regions_.front().first, highest = regions_.back().second;
  std::size_t first = static_cast<std::size_t>((8 - address % 8) % 8);
  for (std::size_t offset = first; offset + 8 <= bytes.size(); offset += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes.data() + offset, 8);
    if (word < lowest || word > highest) continue;  // most words: not a pointer of ours
    if (in_region(word)) relocate_word(bytes, offset);
  }
}

namespace {

// A parameter that holds a number, never an address, in all of its 8-byte words.
bool holds_floating_point(const capture::Param& param) {
  static const std::string_view kFloating[] = {"double",  "float2", "double2", "float4",
                                               "double4", "float3", "double3"};
  for (std::string_view type : kFloating)
    if (param.type == type) return true;
  return false;
}

}  // namespace

void AddressMap::relocate_arguments(std::span<std::byte> args,
                                    const std::vector<capture::Param>& params) const {
  if (!any_moved_) return;
  if (params.empty()) {
    for (std::size_t offset = 0; offset + 8 <= args.size(); offset += 8)
      relocate_word(args, offset);
    return;
  }
  for (const capture::Param& param : params) {
    if (param.size < 8 || holds_floating_point(param)) continue;
    for (std::uint64_t at = (param.offset + 7) / 8 * 8;
         at + 8 <= param.offset + param.size && at + 8 <= args.size(); at += 8)
      relocate_word(args, static_cast<std::size_t>(at));
  }
}

}  // namespace r3::replay
