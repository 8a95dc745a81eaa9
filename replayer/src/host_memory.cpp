#include "host_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "r3/error.hpp"
#include "r3/inspect.hpp"

namespace r3::replay {

HostMemory::~HostMemory() { clear(); }

void HostMemory::clear() {
  for (const Mapping& mapping : mappings_) munmap(mapping.live, mapping.length);
  mappings_.clear();
  any_moved_ = false;
}

void HostMemory::place(const std::vector<Span>& spans) {
  clear();
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;  // [begin, end), page aligned
  for (const Span& span : spans) {
    if (span.size == 0) continue;
    std::uint64_t begin = span.address / page * page;
    std::uint64_t end = (span.address + span.size + page - 1) / page * page;
    if (end < begin) throw Error("a recorded region wraps around the address space");
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
  for (const auto& [begin, end] : merged) {
    const std::uint64_t length = end - begin;
    void* wanted = reinterpret_cast<void*>(begin);
    void* got = mmap(wanted, length, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == MAP_FAILED) {  // the address is taken (EEXIST) or not usable here
      got = mmap(nullptr, length, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (got == MAP_FAILED) {
        int error = errno;
        clear();
        throw IoError("mmap", "cannot map " + format_bytes(length) +
                                  " for the recorded regions: " + std::strerror(error));
      }
    }
    // A kernel older than Linux 4.17 treats the address as a hint: `got` may differ; it is then
    // simply a relocated mapping.
    mappings_.push_back({begin, length, static_cast<std::byte*>(got)});
    any_moved_ = any_moved_ || mappings_.back().moved();
  }
}

AddressMode HostMemory::mode() const {
  return any_moved_ ? AddressMode::relocated : AddressMode::same_address;
}

std::string HostMemory::describe() const {
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

const HostMemory::Mapping* HostMemory::find(std::uint64_t recorded) const {
  auto it =
      std::upper_bound(mappings_.begin(), mappings_.end(), recorded,
                       [](std::uint64_t value, const Mapping& m) { return value < m.recorded; });
  if (it == mappings_.begin()) return nullptr;
  --it;
  // One past the end still belongs to the mapping: C allows such pointers.
  return recorded <= it->recorded + it->length ? &*it : nullptr;
}

std::byte* HostMemory::live(std::uint64_t address) const {
  const Mapping* mapping = find(address);
  if (mapping == nullptr) throw Error("internal: address outside every placed region");
  return mapping->live + (address - mapping->recorded);
}

std::uint64_t HostMemory::translate(std::uint64_t value) const {
  if (!any_moved_) return value;
  const Mapping* mapping = find(value);
  if (mapping == nullptr || !mapping->moved()) return value;
  return reinterpret_cast<std::uint64_t>(mapping->live) + (value - mapping->recorded);
}

void HostMemory::relocate_words(std::span<std::byte> bytes, std::uint64_t address) const {
  if (!any_moved_ || mappings_.empty()) return;
  const std::uint64_t lowest = mappings_.front().recorded;
  const std::uint64_t highest = mappings_.back().recorded + mappings_.back().length;
  std::size_t first = static_cast<std::size_t>((8 - address % 8) % 8);
  for (std::size_t offset = first; offset + 8 <= bytes.size(); offset += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes.data() + offset, 8);
    if (word < lowest || word > highest) continue;  // most words: not a pointer of ours
    std::uint64_t moved = translate(word);
    if (moved != word) std::memcpy(bytes.data() + offset, &moved, 8);
  }
}

}  // namespace r3::replay
