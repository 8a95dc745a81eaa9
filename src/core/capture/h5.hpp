// Thin RAII and error layer over the HDF5 C API, private to libr3core. HDF5 status codes become
// r3 exceptions at the call site, with the API name and HDF5's own innermost message.
#pragma once

#include <hdf5.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace r3::h5 {

// HDF5 builds are usually not thread-safe: every call into HDF5 happens inside a Session, which
// holds one process-wide lock and names the file that errors raised meanwhile refer to.
class Session {
 public:
  explicit Session(std::string file);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

 private:
  std::unique_lock<std::recursive_mutex> lock_;
  std::string previous_file_;
};

// HDF5 (1.10 at least) trusts the global heap that variable-length strings live in, and that heap
// carries no checksum: one damaged byte there makes H5Aread/H5Dread copy past their buffers
// (SIGSEGV) or loop. So a file is first read by `read` in a forked child; only when that child
// ends by itself (read or threw: the caller's own read then throws the same) does the caller read
// it in process. A child killed by a signal, past rehearsal_cpu_seconds(file) of CPU time, or
// still reading after `limit` (a slow file system) is a FormatError naming `file` and `what`.
// Nothing the child read reaches the caller.
void rehearse_read(const std::string& file, std::string_view what, const std::function<void()>& read,
                   std::chrono::seconds limit = std::chrono::seconds(600));

// The CPU time a rehearsal of `file` may take before the file counts as damaged (HDF5 looping on
// its structure): 2 s, and 1 s more per 16 MiB, up to kMostRehearsalCpuSeconds. A small damaged
// file is refused within seconds; reading a sound one takes a small fraction of its limit.
inline constexpr unsigned kMostRehearsalCpuSeconds = 10;
unsigned rehearsal_cpu_seconds(const std::string& file);

// Turns HDF5's automatic error printing off for the calling thread (thread-safe HDF5 builds keep
// one setting per thread); r3 reports errors itself. Every Session calls it.
void silence_errors();

// Whether `path` is an HDF5 file: >0 yes, 0 no, <0 could not tell.
htri_t is_hdf5_file(const char* path);

// The innermost messages of HDF5's current error stack, joined ("" when empty).
std::string error_stack_message();

// Throws IoError(api, what + HDF5's messages), naming the Session's file.
[[noreturn]] void fail(const char* api, std::string_view what);

// Returns status, or throws IoError naming `api` and `what` when HDF5 reports failure (< 0).
template <class T>
T check(T status, const char* api, std::string_view what) {
  if (status < 0) fail(api, what);
  return status;
}

class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : id_(other.id_), closer_(other.closer_) { other.id_ = -1; }
  Handle& operator=(Handle&& other) noexcept;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset();
  // Gives the id up without closing it (for a close whose status matters).
  hid_t release() { return std::exchange(id_, -1); }

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

// The variable-length UTF-8 string type (a fresh copy).
Handle variable_string_type();

// Opening and creating objects (each throws IoError naming `what` on failure).
Handle open_group(hid_t parent, const std::string& name, std::string_view what);
Handle create_group(hid_t parent, const std::string& name, std::string_view what);
Handle open_dataset(hid_t parent, const std::string& name, std::string_view what);
bool link_exists(hid_t parent, const std::string& name);
bool attribute_exists(hid_t object, const std::string& name);
std::vector<std::string> child_names(hid_t group, std::string_view what);
std::vector<std::string> attribute_names(hid_t object, std::string_view what);

// Attributes. Strings are fixed-length UTF-8 on write; variable-length ones (older files) are read
// as well.
void write_string_attribute(hid_t object, const std::string& name, std::string_view value);
void write_int_attribute(hid_t object, const std::string& name, std::int64_t value);
void write_uint_attribute(hid_t object, const std::string& name, std::uint64_t value);
void write_double_attribute(hid_t object, const std::string& name, double value);
void write_uint32_array_attribute(hid_t object, const std::string& name,
                                  std::span<const std::uint32_t> values);
std::string read_string_attribute(hid_t object, const std::string& name, std::string_view what);
std::int64_t read_int_attribute(hid_t object, const std::string& name, std::string_view what);
std::uint64_t read_uint_attribute(hid_t object, const std::string& name, std::string_view what);
double read_double_attribute(hid_t object, const std::string& name, std::string_view what);
// Reads exactly `count` values; anything else is a FormatError.
std::vector<std::uint32_t> read_uint32_array_attribute(hid_t object, const std::string& name,
                                                       std::string_view what, std::size_t count);

// One-dimensional byte datasets.
struct ByteDatasetOptions {
  std::size_t chunk_bytes = 0;  // 0: contiguous; else chunked with Fletcher-32 checksums
  int deflate_level = 0;        // 0: no compression (only with chunk_bytes > 0)
};
void write_bytes(hid_t parent, const std::string& name, std::span<const std::byte> bytes,
                 const ByteDatasetOptions& options);
// A byte dataset that grows: chunked (options.chunk_bytes, at least 1) with Fletcher-32
// checksums and the options' compression, empty until append_bytes. Appending rewrites only
// the chunks the new bytes fall in, so a column appended to at every commit costs what was
// added, not what it holds.
Handle create_growing_bytes(hid_t parent, const std::string& name,
                            const ByteDatasetOptions& options);
// Writes `bytes` at element `at` (its current size), extending the dataset to hold them.
void append_bytes(hid_t dataset, std::uint64_t at, std::span<const std::byte> bytes,
                  std::string_view what);
// Number of elements of a 1-D dataset of 1-byte integers; throws FormatError for anything else.
// Uncompressed datasets cannot hold more bytes than the file, compressed ones no more than 1032
// times it (deflate's limit): a larger extent means damage.
enum class Stored { compressed, uncompressed };
std::uint64_t byte_dataset_size(hid_t dataset, std::string_view what, Stored stored);
// Reads out.size() bytes starting at element `offset`.
void read_bytes(hid_t dataset, std::uint64_t offset, std::span<std::byte> out,
                std::string_view what);

// Rows of an uncompressed 1-D dataset; more rows than the file can hold is a FormatError.
std::uint64_t dataset_rows(hid_t dataset, std::string_view what);
// Checks that the compound file type of `dataset` has every member of `memory_type`.
void require_members(hid_t dataset, hid_t memory_type, std::string_view what);
// A transfer property list for reading or writing `rows` rows of a compound table between
// `file_type` and `memory_type`: HDF5 converts through a buffer no larger than the table needs.
Handle table_transfer(hid_t file_type, hid_t memory_type, std::uint64_t rows, std::string_view what);
// Reads all `rows` rows of the compound `dataset` into buf as `memory_type` (table_transfer).
void read_rows(hid_t dataset, hid_t memory_type, std::uint64_t rows, void* buf,
               std::string_view what);
// Frees the variable-length members HDF5 allocated when reading `rows` rows of `type` into buf.
void reclaim_vlen(hid_t type, std::uint64_t rows, void* buf);

}  // namespace r3::h5
