// The capture file (docs/capture-format.md): per kernel, per recorded launch,
// everything needed to run that launch again alone. One HDF5 file:
//
//   /                      format = "r3-capture", version, created, host, command_line, ...
//   /device                backend, name, architecture, compute capability, memory, versions
//   /contents/<hash>       region contents and code images, one dataset per distinct content
//   /kernels/<id>          names, code image references, parameter table
//   /kernels/<id>/launches/<n>   shape, argument bytes, prologue/globals/epilogue region tables
//
// The in-memory model below holds metadata and content hashes only; contents are read on demand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "r3/hash.hpp"

namespace r3::capture {

inline constexpr std::string_view kFormatName = "r3-capture";
// Bumped on every change a reader of the previous version would misread.
inline constexpr int kFormatVersion = 1;

// Element type of a region, when the recorder knows it; drives verification tolerances.
enum class ElementType : std::uint8_t {
  unknown = 0,
  u8,
  i8,
  u16,
  i16,
  u32,
  i32,
  u64,
  i64,
  f16,
  bf16,
  f32,
  f64
};
inline constexpr ElementType kAllElementTypes[] = {
    ElementType::unknown, ElementType::u8,  ElementType::i8,  ElementType::u16, ElementType::i16,
    ElementType::u32,     ElementType::i32, ElementType::u64, ElementType::i64, ElementType::f16,
    ElementType::bf16,    ElementType::f32, ElementType::f64};
std::string_view to_string(ElementType type);
std::optional<ElementType> parse_element_type(std::string_view text);
std::size_t element_size(ElementType type);  // 1 for unknown
bool is_floating_point(ElementType type);

enum class RegionKind : std::uint8_t {
  allocation = 0,  // device (or host) memory reachable from the arguments
  global = 1,      // a module global or __constant__ symbol; name is the symbol
};
std::string_view to_string(RegionKind kind);

struct Region {
  std::string name;  // declared name, symbol name for globals, or "" when unknown
  RegionKind kind = RegionKind::allocation;
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  ElementType element_type = ElementType::unknown;
  Hash128 content;  // names the dataset /contents/<hex>

  friend bool operator==(const Region&, const Region&) = default;
};

struct Param {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  // True when the value, in a recorded launch, pointed into a recorded region.
  bool is_pointer = false;
  std::string type;  // C type when the recorder knows it, else ""

  friend bool operator==(const Param&, const Param&) = default;
};

struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
  std::uint64_t volume() const { return std::uint64_t{x} * y * z; }
  friend bool operator==(const Dim3&, const Dim3&) = default;
};

// The grid whose blocks of `new_block` threads cover the threads of `grid` blocks of `block`, in
// every dimension: ceil(grid * block / new_block), at most 2^32 - 1. How replay and r3 apply
// launch a kernel with a new block shape.
inline Dim3 covering_grid(const Dim3& grid, const Dim3& block, const Dim3& new_block) {
  auto one = [](std::uint32_t g, std::uint32_t b, std::uint32_t nb) {
    const std::uint64_t threads = std::uint64_t{g} * b;
    const std::uint64_t blocks = (threads + nb - 1) / nb;
    return static_cast<std::uint32_t>(blocks > 0xffffffffu ? 0xffffffffu : blocks);
  };
  return {one(grid.x, block.x, new_block.x), one(grid.y, block.y, new_block.y),
          one(grid.z, block.z, new_block.z)};
}

struct Launch {
  std::uint64_t sequence = 0;  // position among all launches of the application
  Dim3 grid;
  Dim3 block;
  std::uint32_t shared_memory_bytes = 0;  // dynamic shared memory
  std::uint64_t stream = 0;               // recorded stream handle (informational)
  std::vector<std::byte> args;            // the kernel parameter buffer, as launched
  std::vector<Region> prologue;           // reachable memory before the launch
  std::vector<Region> globals;            // module globals before the launch
  std::vector<Region> epilogue;           // regions (of either kind) the launch changed, after it
  std::optional<double> app_time_us;      // the launch's duration inside the application

  friend bool operator==(const Launch&, const Launch&) = default;
};

// Code image kinds with a meaning to r3; others may be stored and are shown as they are.
inline constexpr std::string_view kImagePtx = "ptx";
inline constexpr std::string_view kImageCubin = "cubin";
inline constexpr std::string_view kImageLlvmBitcode = "llvm_bc";
inline constexpr std::string_view kImageSource = "source";

struct Kernel {
  std::string name;                       // as the application knows it (mangled for CUDA)
  std::string demangled_name;             // "" when the same as name or unknown
  std::string kokkos_label;               // "" unless recorded under a Kokkos connector
  // The candidates the application declared for its Kokkos tuning variables of this kernel, by
  // name without the label ("heat::step_tile_size_0" -> "tile_size_0": 1 2 4 ... 64), as the
  // connector saw them while it was recorded: what Kokkos' tuning interface can hand it. Empty:
  // none declared (then Kokkos' own tuners decide what a tool may choose).
  std::map<std::string, std::vector<std::int64_t>> kokkos_choices;
  std::map<std::string, Hash128> images;  // kind -> content
  std::vector<Param> params;
  std::vector<Launch> launches;

  friend bool operator==(const Kernel&, const Kernel&) = default;
};

// kokkos_choices as one line of text, "tile_size_0=1,2,4;tile_size_1=1,2" (the capture's
// attribute, and what the Kokkos connector hands the recorder), and back. Parsing throws
// FormatError naming `where` for anything else.
std::string kokkos_choices_text(const std::map<std::string, std::vector<std::int64_t>>& choices);
std::map<std::string, std::vector<std::int64_t>> parse_kokkos_choices(std::string_view text,
                                                                      const std::string& where);

// A demangled kernel name without its return type and parameters: "MatrixMulCUDA<32>" for
// "void MatrixMulCUDA<32>(float*, float*, float*, int, int)", "ns::scale" for
// "ns::scale(float*, int)". What NVRTC takes as a name expression to instantiate and find it.
std::string instance_name(std::string_view demangled);

// The template arguments of an instance name, split at its top-level commas:
// "MatrixMul<32, std::pair<int, int>>" gives "32" and "std::pair<int, int>"; none without '<'.
std::vector<std::string> template_arguments(std::string_view instance);

// A CUDA region's name ("arg2", "arg0+16", "*(arg4+8)") as the source names the parameters:
// "C", "f+16", "*(table+8)", with `names` the kernel's parameters in order ("" for an unnamed
// one). Other names (globals, allocations) as they are.
std::string source_region_name(const std::vector<std::string>& names, const std::string& region);

struct DeviceInfo {
  std::string backend;       // "cuda" or "host"
  std::string name;          // "NVIDIA H100 80GB HBM3", CPU model name
  std::string architecture;  // "sm_90", "x86_64"
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessor_count = 0;  // SMs, or CPU cores
  std::uint64_t memory_bytes = 0;
  std::uint64_t l2_cache_bytes = 0;
  double memory_bandwidth_gbs = 0;  // 0 when unknown
  std::string driver_version;
  std::string toolkit_version;

  friend bool operator==(const DeviceInfo&, const DeviceInfo&) = default;
};

struct CaptureInfo {
  std::string created;       // ISO 8601 UTC; filled by the writer when empty
  std::string host;          // host name; filled by the writer when empty
  std::string command_line;  // the recorded application's command line
  std::string r3_version;    // filled by the writer
  int rank = -1;             // MPI rank of the recorded process, -1 when not under MPI
  DeviceInfo device;

  friend bool operator==(const CaptureInfo&, const CaptureInfo&) = default;
};

// Writes a capture. Contents go in first (put_content returns their hash, storing each distinct
// content once), then kernels, then launches that refer to the contents by hash. The file is
// flushed after every launch, so an application that dies keeps what was recorded before. A
// write that fails leaves the file as it was before that call (the error says why); strings may
// not contain NUL characters. Not thread-safe: one writer per thread.
class CaptureWriter {
 public:
  struct Options {
    int deflate_level = 1;               // 0 disables compression
    std::size_t chunk_bytes = 1u << 20;  // chunk size of content datasets
    bool flush_each_launch = true;
  };

  // Creates (or truncates) `path`.
  static CaptureWriter create(const std::filesystem::path& path, CaptureInfo info, Options options);
  static CaptureWriter create(const std::filesystem::path& path, CaptureInfo info);

  CaptureWriter(CaptureWriter&&) noexcept;
  CaptureWriter& operator=(CaptureWriter&&) noexcept;
  ~CaptureWriter();  // closes; errors on close are logged, not thrown

  Hash128 put_content(std::span<const std::byte> bytes);
  bool has_content(const Hash128& content) const;

  // Adds a kernel without launches (kernel.launches must be empty); returns its id.
  std::size_t add_kernel(const Kernel& kernel);
  // Adds a launch to kernel `kernel_id`; every region's content must have been put before.
  std::size_t add_launch(std::size_t kernel_id, const Launch& launch);
  // Sets the application time of launch `index` of a kernel once it is known (a recorder learns
  // it after the launch was written): `launch` is that launch as written, with the new
  // app_time_us; its checksum is rewritten to match.
  void set_app_time(std::size_t kernel_id, std::size_t index, const Launch& launch);

  void flush();
  void close();
  const std::filesystem::path& path() const;

 private:
  struct Impl;
  explicit CaptureWriter(std::unique_ptr<Impl> impl);
  // Closes under the HDF5 lock and never throws (destructor, move assignment).
  static void release(std::unique_ptr<Impl>& impl) noexcept;
  std::unique_ptr<Impl> impl_;
};

struct CaptureStats {
  std::size_t kernels = 0;
  std::size_t launches = 0;
  std::size_t regions = 0;             // prologue + globals + epilogue entries
  std::uint64_t referenced_bytes = 0;  // sum of the sizes of all region entries and images
  std::uint64_t unique_bytes = 0;      // sum of the sizes of the distinct contents
  std::uint64_t stored_bytes = 0;      // what the contents take in the file (compressed)
  std::uint64_t file_bytes = 0;
};

// Opens and validates a capture: format name, version, structure, and that every content
// reference resolves to a content of the right size. Contents are read (and their hash checked)
// on demand. Every refusal is a FormatError or IoError naming the file and what is wrong.
class CaptureReader {
 public:
  static CaptureReader open(const std::filesystem::path& path);

  CaptureReader(CaptureReader&&) noexcept;
  CaptureReader& operator=(CaptureReader&&) noexcept;
  ~CaptureReader();

  const std::filesystem::path& path() const;
  int version() const;
  // False when the writer never closed the file (the recorded application ended early): the
  // launches flushed before that are complete and usable.
  bool complete() const;
  const CaptureInfo& info() const;
  const std::vector<Kernel>& kernels() const;

  // By name, demangled name, Kokkos label, or index ("#3"); UnknownKernelError lists the kernels.
  const Kernel& kernel(std::string_view name) const;
  std::optional<std::size_t> find_kernel(std::string_view name) const;

  bool has_content(const Hash128& content) const;
  std::uint64_t content_size(const Hash128& content) const;
  // Reads a content into `out` (exactly content_size bytes) and checks its hash.
  void read_content(const Hash128& content, std::span<std::byte> out) const;
  std::vector<std::byte> read_content(const Hash128& content) const;
  // Reads every content the capture refers to and checks its hash; throws on the first bad one.
  void verify_contents() const;

  // What was usable but not as written: in a capture whose writer did not finish, a last kernel
  // or launch it was writing when it stopped is left out, with a warning here.
  const std::vector<std::string>& warnings() const;

  CaptureStats stats() const;

 private:
  struct Impl;
  // The whole read of open(); open() first rehearses it in a child process (a damaged HDF5
  // global heap crashes the library), then does it here.
  static std::unique_ptr<Impl> read(const std::filesystem::path& path);
  explicit CaptureReader(std::unique_ptr<Impl> impl);
  static void release(std::unique_ptr<Impl>& impl) noexcept;
  std::unique_ptr<Impl> impl_;
};

}  // namespace r3::capture
