// What the CUDA recorder reads out of the code an application loads: the data objects of a cubin
// (module globals and __constant__ symbols) and the PTX of a fat binary. Plain byte parsing,
// without CUDA, so that it is tested on any machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "r3/capture.hpp"
#include "r3/elf.hpp"

namespace r3::record::cuda {

// The data objects of a cubin: r3/elf.hpp (core, which the CUDA backend reads them with too).
using r3::ElfObject;
using r3::elf_objects;
using r3::is_elf64;

// One PTX entry of a fat binary, as stored (possibly compressed).
struct PtxEntry {
  unsigned architecture = 0;  // 90 for sm_90 / compute_90
  std::uint64_t text_size = 0;
  enum class Compression { none, zstd, lz4 } compression = Compression::none;
  std::vector<std::byte> payload;
};

// The start of a fat binary given what an application handed to cuLibraryLoadData /
// cuModuleLoadData / cuModuleLoadFatBinary: the runtime's wrapper (magic 0x466243b1) or the fat
// binary itself (magic 0xba55ed50). nullptr for anything else (a cubin, PTX text).
const std::byte* find_fatbin(const void* code);

// The PTX entries of the fat binary at `fatbin`; its size comes from its header. Throws r3::Error
// when the header is damaged.
std::vector<PtxEntry> fatbin_ptx_entries(const std::byte* fatbin);

// The PTX text of an entry. Throws r3::Error naming the compression when it cannot be read
// (LZ4, used by nvcc before CUDA 13, is not read; zstd only when built with it).
std::string ptx_text(const PtxEntry& entry);

// The module-scope variables PTX text declares in the global or constant state space
// (`.global .align 8 .u64 table[2];`, `.const .align 4 .f32 scale;`), for modules loaded from
// PTX whose cubin the recorder does not see.
std::vector<std::string> ptx_variables(std::string_view ptx);

// Whether PTX text defines the kernel entry `name`.
bool ptx_defines_entry(std::string_view ptx, std::string_view name);

// The parameter types of a demangled kernel name ("heat_step(float const*, float*, int)" ->
// {"float const*", "float*", "int"}); empty when there is no parameter list.
std::vector<std::string> parameter_types(std::string_view demangled);

// The element type of the memory a parameter of type `type` points to: f32 for "float const*",
// u64 for a table of pointers ("float* const*"), unknown for what is not a pointer to a
// fundamental type (structs, void*).
capture::ElementType pointee_element_type(std::string_view type);

}  // namespace r3::record::cuda
