// The data objects of an ELF64 image: a cubin's __device__ and __constant__ variables. The CUDA
// recorder records them; the CUDA backend resets a candidate's own to their initial values
// before every run (docs/security.md). Plain byte parsing, tested on any machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace r3 {

struct ElfObject {
  std::string name;
  std::uint64_t size = 0;
};

bool is_elf64(std::span<const std::byte> image);

// The defined data objects of an ELF64 image with a size (a cubin's __device__ and __constant__
// variables), without compiler-made ones ($str and the like). Throws r3::Error when the image is
// not ELF64 or its symbol table runs past its end.
std::vector<ElfObject> elf_objects(std::span<const std::byte> elf);

}  // namespace r3
