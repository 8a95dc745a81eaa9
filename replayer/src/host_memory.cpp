#include "host_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "r3/error.hpp"
#include "r3/inspect.hpp"

namespace r3::replay {

HostMemory::~HostMemory() { clear(); }

void HostMemory::clear() {
  for (const AddressMap::Mapping& mapping : map_.mappings())
    munmap(reinterpret_cast<void*>(mapping.live), mapping.length);
  map_.clear();
}

void HostMemory::place(const std::vector<Span>& spans) {
  clear();
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  for (const auto& [begin, end] : merge_ranges(spans, page)) {
    const std::uint64_t length = end - begin;
    void* wanted = reinterpret_cast<void*>(begin);
    void* got = mmap(wanted, length, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == MAP_FAILED) {  // the address is taken (EEXIST) or not usable here
      got = mmap(nullptr, length, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (got == MAP_FAILED) {
        int error = errno;
        clear();
        throw IoError("mmap", "cannot map " + format_bytes(length) +
                                  " for the recorded regions: " + std::strerror(error));
      }
    }
    // A kernel older than Linux 4.17 treats the address as a hint: `got` may differ; it is then
    // simply a relocated mapping.
    map_.add(begin, length, reinterpret_cast<std::uint64_t>(got));
  }
  map_.set_regions(spans);
}

}  // namespace r3::replay
