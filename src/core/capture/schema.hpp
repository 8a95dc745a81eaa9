// The capture file's HDF5 layout, shared by writer and reader (docs/capture-format.md).
#pragma once

#include <cstdint>
#include <string>

#include "h5.hpp"
#include "r3/capture.hpp"

namespace r3::capture::schema {

inline constexpr const char* kContents = "contents";
inline constexpr const char* kKernels = "kernels";
inline constexpr const char* kLaunches = "launches";
inline constexpr const char* kDevice = "device";
inline constexpr const char* kParams = "params";
inline constexpr const char* kArgs = "args";
inline constexpr const char* kPrologue = "prologue";
inline constexpr const char* kGlobals = "globals";
inline constexpr const char* kEpilogue = "epilogue";
// Kernel attributes naming code images: "image_ptx" = "<content hash>".
inline constexpr std::string_view kImageAttributePrefix = "image_";

// One row of a prologue/globals/epilogue table, as laid out in memory for H5Dread/H5Dwrite.
struct RegionRow {
  char* name;  // variable-length UTF-8
  std::uint8_t kind;
  std::uint8_t element_type;
  std::uint64_t address;
  std::uint64_t size;
  char content[32];  // hexadecimal content hash, not NUL-terminated
};

struct ParamRow {
  std::uint64_t offset;
  std::uint64_t size;
  std::uint8_t is_pointer;
  char* type;  // variable-length UTF-8
};

// Memory types (native layout); the file types are the same, packed.
h5::Handle region_memory_type();
h5::Handle param_memory_type();
h5::Handle packed(hid_t memory_type);

// Checksums of the metadata the reader builds from each group (names, shapes, arguments, region
// tables), stored as the attribute "checksum": damage that HDF5 itself does not detect (bytes in
// its global heap, where variable-length strings live) is caught by comparing them.
inline constexpr const char* kChecksum = "checksum";
Hash128 checksum(const CaptureInfo& info, int version);
Hash128 checksum(const Kernel& kernel);  // without its launches
Hash128 checksum(const Launch& launch);

// Kernel and launch group names are their decimal index.
std::string index_name(std::size_t index);

}  // namespace r3::capture::schema
