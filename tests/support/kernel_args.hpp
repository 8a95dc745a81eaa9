// Argument bytes for a host kernel compiled by r3::compiler, laid out as the recorder lays them
// out: each at its natural alignment, with its offset.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "r3/compiler/host_compiler.hpp"

namespace r3::test {

class KernelArgs {
 public:
  template <class T>
  KernelArgs& add(const T& value) {
    std::size_t offset = (bytes_.size() + alignof(T) - 1) / alignof(T) * alignof(T);
    bytes_.resize(offset + sizeof(T));
    std::memcpy(bytes_.data() + offset, &value, sizeof(T));
    offsets_.push_back(offset);
    return *this;
  }
  void call(const compiler::HostCompileResult& compiled) const {
    ASSERT_TRUE(compiled.ok()) << compiled.diagnostics;
    compiler::entry_of (*compiled.kernel)(bytes_.data(), offsets_.data());
  }

 private:
  std::vector<unsigned char> bytes_;
  std::vector<std::uint64_t> offsets_;
};

}  // namespace r3::test
