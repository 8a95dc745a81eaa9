// Placing recorded regions: at their recorded addresses, or relocated with pointers rewritten.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "host_memory.hpp"

namespace {

using r3::replay::AddressMode;
using r3::replay::HostMemory;

const std::uint64_t kPage = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));

// An address range of `pages` pages that nothing uses right now.
std::uint64_t free_range(std::size_t pages) {
  void* p = mmap(nullptr, pages * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(p, MAP_FAILED);
  munmap(p, pages * kPage);
  return reinterpret_cast<std::uint64_t>(p);
}

// A page at an address nothing used, mapped for as long as it lives: a region recorded there is
// placed elsewhere (relocated).
class OccupiedPage {
 public:
  OccupiedPage()
      : base_(free_range(1)),
        occupant_(mmap(reinterpret_cast<void*>(base_), kPage, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0)) {}
  ~OccupiedPage() {
    if (occupied()) munmap(occupant_, kPage);
  }
  OccupiedPage(const OccupiedPage&) = delete;
  OccupiedPage& operator=(const OccupiedPage&) = delete;
  bool occupied() const { return occupant_ == reinterpret_cast<void*>(base_); }
  std::uint64_t base() const { return base_; }

 private:
  std::uint64_t base_;
  void* occupant_;
};

TEST(HostMemory, PlacesRegionsAtTheirRecordedAddresses) {
  const std::uint64_t base = free_range(8);
  HostMemory memory;
  memory.place({{base + 100, 1000}, {base + 3 * kPage, 2 * kPage}});
  EXPECT_EQ(memory.mode(), AddressMode::same_address);
  EXPECT_EQ(reinterpret_cast<std::uint64_t>(memory.live(base + 100)), base + 100);
  EXPECT_EQ(memory.translate(base + 200), base + 200);
  memory.live(base + 100)[0] = std::byte{7};  // writable
  EXPECT_EQ(memory.describe(), "same address (2 mappings, 12.0 KiB)");
}

TEST(HostMemory, OverlappingRegionsShareOneMapping) {
  const std::uint64_t base = free_range(4);
  HostMemory memory;
  memory.place({{base, 100}, {base + 50, kPage}, {base + kPage + 10, 10}});
  EXPECT_EQ(memory.describe(), "same address (1 mapping, 8.00 KiB)");
}

TEST(HostMemory, RelocatesWhenTheAddressIsTakenAndRewritesPointers) {
  const OccupiedPage page;
  ASSERT_TRUE(page.occupied());
  const std::uint64_t base = page.base();
  HostMemory memory;
  memory.place({{base + 64, 256}});
  EXPECT_EQ(memory.mode(), AddressMode::relocated);
  std::byte* live = memory.live(base + 64);
  EXPECT_NE(reinterpret_cast<std::uint64_t>(live), base + 64);
  EXPECT_EQ(memory.translate(base + 64), reinterpret_cast<std::uint64_t>(live));
  EXPECT_EQ(memory.translate(12345), 12345u);  // not a pointer into a recorded region

  // 28 bytes recorded at base + 68: the 8-byte boundaries of the recorded address space fall
  // at bytes 4, 12 and 20. A pointer at bytes[0..8) straddles one and must stay as it is; the
  // pointer at bytes[20..28) lies on one and must be rewritten; nothing else may change.
  std::byte bytes[28] = {};
  const std::uint64_t straddling = base + 64 + 16, aligned = base + 64;
  std::memcpy(bytes, &straddling, 8);
  const std::uint32_t small = 42;
  std::memcpy(bytes + 12, &small, 4);
  std::memcpy(bytes + 20, &aligned, 8);
  std::byte before[28];
  std::memcpy(before, bytes, 28);
  memory.relocate_words(std::span(bytes), base + 68);
  EXPECT_EQ(std::memcmp(bytes, before, 20), 0);
  std::uint64_t rewritten;
  std::memcpy(&rewritten, bytes + 20, 8);
  EXPECT_EQ(rewritten, reinterpret_cast<std::uint64_t>(live));
}

TEST(HostMemory, ArgumentBuffersAreRewrittenOnTheirOwnAlignment) {
  const OccupiedPage page;
  ASSERT_TRUE(page.occupied());
  const std::uint64_t base = page.base();
  HostMemory memory;
  memory.place({{base, 128}});
  std::uint64_t args[2] = {base + 8, 7};
  memory.relocate_words(std::as_writable_bytes(std::span(args)), 0);
  EXPECT_EQ(args[0], reinterpret_cast<std::uint64_t>(memory.live(base + 8)));
  EXPECT_EQ(args[1], 7u);
}

// 256 bytes recorded at base + 64 of an occupied page, placed at `live` elsewhere.
class RelocatedRegion : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(page.occupied());
    memory.place({{base + 64, 256}});
    ASSERT_EQ(memory.mode(), AddressMode::relocated);
    live = reinterpret_cast<std::uint64_t>(memory.live(base + 64));
  }
  const OccupiedPage page;
  const std::uint64_t base = page.base();
  HostMemory memory;
  std::uint64_t live = 0;
};

// Data that reads as an address into a moved mapping, but into none of its recorded regions,
// stays as it is: the 4 KiB page around a region of 256 bytes is mapped, and two ints side by
// side can make any value in it.
TEST_F(RelocatedRegion, OnlyWordsPointingIntoARecordedRegionAreRewritten) {
  std::uint64_t words[5] = {base + 64, base + 64 + 100, base + 64 + 256, base + 64 + 264, base + 8};
  memory.relocate_words(std::as_writable_bytes(std::span(words)), 0);
  EXPECT_EQ(words[0], live);             // its first byte
  EXPECT_EQ(words[1], live + 100);       // inside
  EXPECT_EQ(words[2], live + 256);       // one past its end: C allows such pointers
  EXPECT_EQ(words[3], base + 64 + 264);  // beyond it, in the same page
  EXPECT_EQ(words[4], base + 8);         // before it, in the same page
}

// In an argument buffer, a pointer parameter (or a struct of pointers) is rewritten wherever in
// a moved mapping it points, but two int parameters or a double are numbers whatever they read
// as.
TEST_F(RelocatedRegion, ArgumentsAreRewrittenOnlyInParametersThatCanHoldAnAddress) {
  // (int rows, int columns, const float* in, double scale, Views views) with Views = 16 bytes
  const std::vector<r3::capture::Param> params = {{0, 4, false, "int"},
                                                  {4, 4, false, "int"},
                                                  {8, 8, true, "const float*"},
                                                  {16, 8, false, "double"},
                                                  {24, 16, false, ""}};
  const std::uint64_t ints = base + 64 + 8;  // as rows and columns side by side
  std::uint64_t args[5] = {ints, base + 64 + 16, base + 64 + 24, base + 60, base + 64 + 32};
  auto bytes = std::as_writable_bytes(std::span(args));
  memory.map().relocate_arguments(bytes, params);
  EXPECT_EQ(args[0], ints);
  EXPECT_EQ(args[1], live + 16);
  EXPECT_EQ(args[2], base + 64 + 24);
  EXPECT_EQ(args[3], live - 4);  // an argument may point just before its array
  EXPECT_EQ(args[4], live + 32);
  // Without parameter information every aligned word is a candidate, as before.
  std::uint64_t unknown[2] = {ints, base + 64 + 24};
  memory.map().relocate_arguments(std::as_writable_bytes(std::span(unknown)), {});
  EXPECT_EQ(unknown[0], live + 8);
  EXPECT_EQ(unknown[1], live + 24);
}

}  // namespace
