#include "h5.hpp"

#include <signal.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <new>
#include <utility>

#include "r3/error.hpp"

namespace r3::h5 {
namespace {

herr_t collect_error(unsigned n, const H5E_error2_t* entry, void* data) {
  auto* messages = static_cast<std::vector<std::string>*>(data);
  if (entry->desc != nullptr && entry->desc[0] != '\0') messages->emplace_back(entry->desc);
  return 0;
}

}  // namespace

namespace {
std::recursive_mutex& hdf5_mutex() {
  static std::recursive_mutex mutex;
  return mutex;
}
std::string& current_file() {
  static std::string file;  // guarded by hdf5_mutex
  return file;
}
}  // namespace

Session::Session(std::string file) : lock_(hdf5_mutex()) {
  silence_errors();
  previous_file_ = std::exchange(current_file(), std::move(file));
}

Session::~Session() { current_file() = std::move(previous_file_); }

unsigned rehearsal_cpu_seconds(const std::string& file) {
  // Reading the structure of a capture with 10^5 launches takes well under a second of CPU, and
  // a 16 MiB file a small fraction of one; a file that cannot be sized gets the most.
  constexpr std::uintmax_t kBytesPerSecond = std::uintmax_t{16} << 20;
  std::error_code error;
  const std::uintmax_t bytes = std::filesystem::file_size(file, error);
  if (error) return kMostRehearsalCpuSeconds;
  return static_cast<unsigned>(
      std::min<std::uintmax_t>(kMostRehearsalCpuSeconds, 2 + bytes / kBytesPerSecond));
}

void rehearse_read(const std::string& file, std::string_view what, const std::function<void()>& read,
                   std::chrono::seconds limit) {
  const rlim_t cpu_seconds = rehearsal_cpu_seconds(file);
  // The child holds the write end of `ended` until it exits: the parent waits on the read end.
  int ended[2];
  if (::pipe2(ended, O_CLOEXEC) != 0) return;  // no descriptors to spare: read in process
  pid_t child = -1;
  {
    // Held across fork so that no other thread is inside HDF5 (or our lock) at that moment.
    std::lock_guard<std::recursive_mutex> hold(hdf5_mutex());
    child = ::fork();
    if (child == 0) {
      // The copied lock names a thread this process does not have: start it afresh.
      new (&hdf5_mutex()) std::recursive_mutex;
      ::close(ended[0]);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      rlimit no_core{0, 0};
      ::setrlimit(RLIMIT_CORE, &no_core);
      // A structure HDF5 loops on burns CPU; a large file on a slow file system waits instead.
      rlimit cpu{cpu_seconds, cpu_seconds + 1};
      ::setrlimit(RLIMIT_CPU, &cpu);
      int status = 0;
      try {
        read();
      } catch (...) {
        status = 1;
      }
      ::_exit(status);
    }
  }
  ::close(ended[1]);
  if (child < 0) {
    ::close(ended[0]);
    return;  // no process to spare: read in process, as before
  }
  auto deadline = std::chrono::steady_clock::now() + limit;
  bool in_time = false;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd end{ended[0], POLLIN, 0};
    int ready = ::poll(&end, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready > 0) {  // end of file: the child has exited
      in_time = true;
      break;
    }
    if (ready < 0 && errno != EINTR) break;
  }
  ::close(ended[0]);
  if (!in_time) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return;  // reaped elsewhere: read in process, as before
  }
  if (!in_time) {
    throw FormatError(std::string(what) + " could not be read: reading it did not finish within " +
                          std::to_string(limit.count()) + " s; nothing was read from it",
                      in_file(file));
  }
  if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGXCPU || WTERMSIG(status) == SIGKILL)) {
    throw FormatError(std::string(what) + " is damaged: reading it took more than " +
                          std::to_string(cpu_seconds) +
                          " s of CPU time (HDF5 loops on a damaged structure); nothing was read "
                          "from it",
                      in_file(file));
  }
  if (WIFSIGNALED(status)) {
    throw FormatError(std::string(what) + " is damaged: reading it crashed the HDF5 library (" +
                          ::strsignal(WTERMSIG(status)) + "); nothing was read from it",
                      in_file(file));
  }
}

void silence_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

htri_t is_hdf5_file(const char* path) {
#if H5_VERSION_GE(1, 12, 0)
  return H5Fis_accessible(path, H5P_DEFAULT);
#else
  return H5Fis_hdf5(path);
#endif
}

std::string error_stack_message() {
  std::vector<std::string> messages;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_error, &messages);
  H5Eclear2(H5E_DEFAULT);
  // The innermost entries say what actually went wrong ("truncated file: eof = ...");
  // the outer ones repeat "unable to open file" at each level.
  std::string out;
  for (std::size_t i = 0; i < messages.size() && i < 2; ++i) {
    if (!out.empty()) out += "; ";
    out += messages[i];
  }
  return out;
}

void fail(const char* api, std::string_view what) {
  std::string detail = error_stack_message();
  std::string message(what);
  if (!detail.empty()) message += " (HDF5: " + detail + ")";
  throw IoError(api, message, in_file(current_file()));
}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    closer_ = other.closer_;
    other.id_ = -1;
  }
  return *this;
}

void Handle::reset() {
  if (id_ >= 0 && closer_ != nullptr) closer_(id_);
  id_ = -1;
}

Handle open_group(hid_t parent, const std::string& name, std::string_view what) {
  if (!link_exists(parent, name)) {
    throw FormatError(std::string(what) + " is missing");
  }
  return Handle(check(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), "H5Gopen2", what), H5Gclose);
}

Handle create_group(hid_t parent, const std::string& name, std::string_view what) {
  return Handle(check(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                      "H5Gcreate2", what),
                H5Gclose);
}

Handle open_dataset(hid_t parent, const std::string& name, std::string_view what) {
  if (!link_exists(parent, name)) {
    throw FormatError(std::string(what) + " is missing");
  }
  return Handle(check(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), "H5Dopen2", what), H5Dclose);
}

bool link_exists(hid_t parent, const std::string& name) {
  return check(H5Lexists(parent, name.c_str(), H5P_DEFAULT), "H5Lexists", name) > 0;
}

bool attribute_exists(hid_t object, const std::string& name) {
  return check(H5Aexists(object, name.c_str()), "H5Aexists", name) > 0;
}

namespace {
herr_t collect_link_name(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}
herr_t collect_attribute_name(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> child_names(hid_t group, std::string_view what) {
  std::vector<std::string> names;
  hsize_t index = 0;
  check(H5Literate(group, H5_INDEX_NAME, H5_ITER_NATIVE, &index, collect_link_name, &names),
        "H5Literate", what);
  return names;
}

std::vector<std::string> attribute_names(hid_t object, std::string_view what) {
  std::vector<std::string> names;
  hsize_t index = 0;
  check(H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_NATIVE, &index, collect_attribute_name, &names),
        "H5Aiterate2", what);
  return names;
}

namespace {

Handle scalar_space() {
  return Handle(check(H5Screate(H5S_SCALAR), "H5Screate", "dataspace"), H5Sclose);
}

}  // namespace

Handle variable_string_type() {
  Handle type(check(H5Tcopy(H5T_C_S1), "H5Tcopy", "string type"), H5Tclose);
  check(H5Tset_size(type, H5T_VARIABLE), "H5Tset_size", "string type");
  check(H5Tset_cset(type, H5T_CSET_UTF8), "H5Tset_cset", "string type");
  return type;
}

namespace {

void write_attribute(hid_t object, const std::string& name, hid_t type, hid_t space,
                     const void* value) {
  if (attribute_exists(object, name)) {
    check(H5Adelete(object, name.c_str()), "H5Adelete", name);
  }
  Handle attribute(check(H5Acreate2(object, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT),
                         "H5Acreate2", "attribute '" + name + "'"),
                   H5Aclose);
  check(H5Awrite(attribute, type, value), "H5Awrite", "attribute '" + name + "'");
}

Handle open_attribute(hid_t object, const std::string& name, std::string_view what) {
  if (!attribute_exists(object, name)) {
    throw FormatError(std::string(what) + ": attribute '" + name + "' is missing");
  }
  return Handle(check(H5Aopen(object, name.c_str(), H5P_DEFAULT), "H5Aopen",
                      std::string(what) + ": attribute '" + name + "'"),
                H5Aclose);
}

// Reads a scalar numeric attribute through HDF5's conversion into `memory_type`.
void read_scalar(hid_t object, const std::string& name, std::string_view what, hid_t memory_type,
                 void* out) {
  Handle attribute = open_attribute(object, name, what);
  std::string where = std::string(what) + ": attribute '" + name + "'";
  Handle type(check(H5Aget_type(attribute), "H5Aget_type", where), H5Tclose);
  H5T_class_t type_class = H5Tget_class(type);
  if (type_class != H5T_INTEGER && type_class != H5T_FLOAT) {
    throw FormatError(where + " is not a number");
  }
  Handle space(check(H5Aget_space(attribute), "H5Aget_space", where), H5Sclose);
  if (H5Sget_simple_extent_npoints(space) != 1) {
    throw FormatError(where + " is not a single value");
  }
  check(H5Aread(attribute, memory_type, out), "H5Aread", where);
}

}  // namespace

// Fixed-length, so the text lives in the (checksummed) object header: a variable-length string
// lives in the global heap, which has no checksum and whose damage crashes HDF5 1.10.
void write_string_attribute(hid_t object, const std::string& name, std::string_view value) {
  Handle type(check(H5Tcopy(H5T_C_S1), "H5Tcopy", "string type"), H5Tclose);
  check(H5Tset_size(type, std::max<std::size_t>(1, value.size())), "H5Tset_size", "string type");
  check(H5Tset_strpad(type, H5T_STR_NULLPAD), "H5Tset_strpad", "string type");
  check(H5Tset_cset(type, H5T_CSET_UTF8), "H5Tset_cset", "string type");
  Handle space = scalar_space();
  std::string copy(value);
  copy.resize(std::max<std::size_t>(1, value.size()), '\0');
  write_attribute(object, name, type, space, copy.data());
}

void write_int_attribute(hid_t object, const std::string& name, std::int64_t value) {
  Handle space = scalar_space();
  write_attribute(object, name, H5T_NATIVE_INT64, space, &value);
}

void write_uint_attribute(hid_t object, const std::string& name, std::uint64_t value) {
  Handle space = scalar_space();
  write_attribute(object, name, H5T_NATIVE_UINT64, space, &value);
}

void write_double_attribute(hid_t object, const std::string& name, double value) {
  Handle space = scalar_space();
  write_attribute(object, name, H5T_NATIVE_DOUBLE, space, &value);
}

void write_uint32_array_attribute(hid_t object, const std::string& name,
                                  std::span<const std::uint32_t> values) {
  hsize_t dims[1] = {values.size()};
  Handle space(check(H5Screate_simple(1, dims, nullptr), "H5Screate_simple", name), H5Sclose);
  write_attribute(object, name, H5T_NATIVE_UINT32, space, values.data());
}

std::string read_string_attribute(hid_t object, const std::string& name, std::string_view what) {
  Handle attribute = open_attribute(object, name, what);
  std::string where = std::string(what) + ": attribute '" + name + "'";
  Handle file_type(check(H5Aget_type(attribute), "H5Aget_type", where), H5Tclose);
  if (H5Tget_class(file_type) != H5T_STRING) throw FormatError(where + " is not a string");
  Handle space(check(H5Aget_space(attribute), "H5Aget_space", where), H5Sclose);
  if (H5Sget_simple_extent_npoints(space) != 1) throw FormatError(where + " is not one string");
  if (check(H5Tis_variable_str(file_type), "H5Tis_variable_str", where) > 0) {
    Handle memory_type = variable_string_type();
    char* value = nullptr;
    check(H5Aread(attribute, memory_type, &value), "H5Aread", where);
    std::string out = value != nullptr ? value : "";
    if (value != nullptr) H5free_memory(value);
    return out;
  }
  std::size_t size = H5Tget_size(file_type);
  if (size == 0 || size > (1u << 26)) throw FormatError(where + " has an impossible size");
  Handle memory_type(check(H5Tcopy(file_type), "H5Tcopy", where), H5Tclose);
  std::string buffer(size, '\0');
  check(H5Aread(attribute, memory_type, buffer.data()), "H5Aread", where);
  buffer.resize(std::strlen(buffer.c_str()));
  return buffer;
}

std::int64_t read_int_attribute(hid_t object, const std::string& name, std::string_view what) {
  std::int64_t value = 0;
  read_scalar(object, name, what, H5T_NATIVE_INT64, &value);
  return value;
}

std::uint64_t read_uint_attribute(hid_t object, const std::string& name, std::string_view what) {
  std::uint64_t value = 0;
  read_scalar(object, name, what, H5T_NATIVE_UINT64, &value);
  return value;
}

double read_double_attribute(hid_t object, const std::string& name, std::string_view what) {
  double value = 0;
  read_scalar(object, name, what, H5T_NATIVE_DOUBLE, &value);
  return value;
}

std::vector<std::uint32_t> read_uint32_array_attribute(hid_t object, const std::string& name,
                                                       std::string_view what, std::size_t count) {
  Handle attribute = open_attribute(object, name, what);
  std::string where = std::string(what) + ": attribute '" + name + "'";
  Handle type(check(H5Aget_type(attribute), "H5Aget_type", where), H5Tclose);
  if (H5Tget_class(type) != H5T_INTEGER) throw FormatError(where + " is not integer");
  Handle space(check(H5Aget_space(attribute), "H5Aget_space", where), H5Sclose);
  hssize_t points =
      check(H5Sget_simple_extent_npoints(space), "H5Sget_simple_extent_npoints", where);
  if (static_cast<std::uint64_t>(points) != count) {
    throw FormatError(where + " must hold " + std::to_string(count) + " values, holds " +
                      std::to_string(points));
  }
  std::vector<std::uint32_t> values(count);
  if (count > 0) check(H5Aread(attribute, H5T_NATIVE_UINT32, values.data()), "H5Aread", where);
  return values;
}

namespace {

// A 1-D byte dataset of `size` bytes, at most `most` (H5S_UNLIMITED: it may grow); chunked
// with Fletcher-32 checksums and the options' compression where `chunk` > 0, else contiguous.
Handle create_bytes(hid_t parent, const std::string& name, hsize_t size, hsize_t most,
                    hsize_t chunk, const ByteDatasetOptions& options) {
  std::string where = "dataset '" + name + "'";
  hsize_t dims[1] = {size}, most_dims[1] = {most};
  Handle space(check(H5Screate_simple(1, dims, most_dims), "H5Screate_simple", where), H5Sclose);
  Handle create(check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", where), H5Pclose);
  if (chunk > 0) {
    hsize_t chunk_dims[1] = {chunk};
    check(H5Pset_chunk(create, 1, chunk_dims), "H5Pset_chunk", where);
    check(H5Pset_fletcher32(create), "H5Pset_fletcher32", where);
    if (options.deflate_level > 0) {
      check(H5Pset_deflate(create, static_cast<unsigned>(options.deflate_level)), "H5Pset_deflate",
            where);
    }
  }
  return Handle(
      check(H5Dcreate2(parent, name.c_str(), H5T_STD_U8LE, space, H5P_DEFAULT, create, H5P_DEFAULT),
            "H5Dcreate2", where),
      H5Dclose);
}

}  // namespace

void write_bytes(hid_t parent, const std::string& name, std::span<const std::byte> bytes,
                 const ByteDatasetOptions& options) {
  const hsize_t chunk = options.chunk_bytes > 0 && !bytes.empty()
                            ? std::min<hsize_t>(bytes.size(), options.chunk_bytes)
                            : 0;
  Handle dataset = create_bytes(parent, name, bytes.size(), bytes.size(), chunk, options);
  if (!bytes.empty()) {
    check(H5Dwrite(dataset, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()),
          "H5Dwrite", "dataset '" + name + "'");
  }
}

Handle create_growing_bytes(hid_t parent, const std::string& name,
                            const ByteDatasetOptions& options) {
  return create_bytes(parent, name, 0, H5S_UNLIMITED, std::max<std::size_t>(1, options.chunk_bytes),
                      options);
}

namespace {

// The file and memory spaces of bytes `start`..`start + count` of a 1-D byte dataset.
struct ByteRange {
  Handle file_space, memory_space;
};
ByteRange byte_range(hid_t dataset, hsize_t start, hsize_t count, std::string_view what) {
  ByteRange range;
  range.file_space = Handle(check(H5Dget_space(dataset), "H5Dget_space", what), H5Sclose);
  hsize_t starts[1] = {start}, counts[1] = {count};
  check(H5Sselect_hyperslab(range.file_space, H5S_SELECT_SET, starts, nullptr, counts, nullptr),
        "H5Sselect_hyperslab", what);
  range.memory_space =
      Handle(check(H5Screate_simple(1, counts, nullptr), "H5Screate_simple", what), H5Sclose);
  return range;
}

}  // namespace

void append_bytes(hid_t dataset, std::uint64_t at, std::span<const std::byte> bytes,
                  std::string_view what) {
  if (bytes.empty()) return;
  hsize_t size[1] = {at + bytes.size()};
  check(H5Dset_extent(dataset, size), "H5Dset_extent", what);
  const ByteRange range = byte_range(dataset, at, bytes.size(), what);
  check(H5Dwrite(dataset, H5T_NATIVE_UINT8, range.memory_space, range.file_space, H5P_DEFAULT,
                 bytes.data()),
        "H5Dwrite", what);
}

namespace {

std::uint64_t extent(hid_t dataset, std::string_view what) {
  Handle space(check(H5Dget_space(dataset), "H5Dget_space", what), H5Sclose);
  int rank = check(H5Sget_simple_extent_ndims(space), "H5Sget_simple_extent_ndims", what);
  if (rank != 1) throw FormatError(std::string(what) + " is not one-dimensional");
  hsize_t dims[1] = {0};
  check(H5Sget_simple_extent_dims(space, dims, nullptr), "H5Sget_simple_extent_dims", what);
  return dims[0];
}

}  // namespace

std::uint64_t byte_dataset_size(hid_t dataset, std::string_view what, Stored stored) {
  Handle type(check(H5Dget_type(dataset), "H5Dget_type", what), H5Tclose);
  if (H5Tget_class(type) != H5T_INTEGER || H5Tget_size(type) != 1) {
    throw FormatError(std::string(what) + " is not a byte array");
  }
  if (stored == Stored::uncompressed) return dataset_rows(dataset, what);
  std::uint64_t size = extent(dataset, what);
  // Deflate shrinks at most ~1032:1: a larger extent is damage (a 1 TiB region in a small
  // file), refused before anyone allocates or reads it.
  Handle file(check(H5Iget_file_id(dataset), "H5Iget_file_id", what), H5Fclose);
  hsize_t file_bytes = 0;
  check(H5Fget_filesize(file, &file_bytes), "H5Fget_filesize", what);
  if (size / 1032 > file_bytes) {
    throw FormatError(std::string(what) + " claims " + std::to_string(size) +
                      " bytes, more than a file of " + std::to_string(file_bytes) +
                      " bytes can hold even compressed");
  }
  return size;
}

void read_bytes(hid_t dataset, std::uint64_t offset, std::span<std::byte> out,
                std::string_view what) {
  if (out.empty()) return;
  const ByteRange range = byte_range(dataset, offset, out.size(), what);
  check(H5Dread(dataset, H5T_NATIVE_UINT8, range.memory_space, range.file_space, H5P_DEFAULT,
                out.data()),
        "H5Dread", what);
}

std::uint64_t dataset_rows(hid_t dataset, std::string_view what) {
  std::uint64_t rows = extent(dataset, what);
  Handle type(check(H5Dget_type(dataset), "H5Dget_type", what), H5Tclose);
  std::uint64_t row_bytes = std::max<std::uint64_t>(1, H5Tget_size(type));
  Handle file(check(H5Iget_file_id(dataset), "H5Iget_file_id", what), H5Fclose);
  hsize_t file_bytes = 0;
  check(H5Fget_filesize(file, &file_bytes), "H5Fget_filesize", what);
  if (rows > file_bytes / row_bytes) {
    throw FormatError(std::string(what) + " claims " + std::to_string(rows) +
                      " rows, more than the file can hold");
  }
  return rows;
}

void require_members(hid_t dataset, hid_t memory_type, std::string_view what) {
  Handle file_type(check(H5Dget_type(dataset), "H5Dget_type", what), H5Tclose);
  if (H5Tget_class(file_type) != H5T_COMPOUND) {
    throw FormatError(std::string(what) + " is not a table (compound dataset)");
  }
  int members = check(H5Tget_nmembers(memory_type), "H5Tget_nmembers", what);
  for (int i = 0; i < members; ++i) {
    char* name = H5Tget_member_name(memory_type, static_cast<unsigned>(i));
    std::string member = name != nullptr ? name : "";
    H5free_memory(name);
    if (H5Tget_member_index(file_type, member.c_str()) < 0) {
      H5Eclear2(H5E_DEFAULT);
      throw FormatError(std::string(what) + " has no column '" + member + "'");
    }
  }
}

Handle table_transfer(hid_t file_type, hid_t memory_type, std::uint64_t rows,
                      std::string_view what) {
  // HDF5 converts a compound table through a buffer of 1 MiB and a background buffer of as much,
  // both zeroed on every read or write: for the many small tables of a capture, that zeroing was
  // most of the reading time (and, in a forked rehearsal, 2 MiB of fresh pages per table). A
  // buffer of the table's own size converts it in one pass all the same.
  // The buffer must hold one row in either type. H5Dget_type gives the file type with its
  // variable-length strings laid out as in memory (8 bytes), while on disk they take 16: twice
  // the larger size is a bound that needs no walk through the members.
  constexpr std::uint64_t kDefaultBufferBytes = 1 << 20;
  std::uint64_t row_bytes =
      2 * std::max<std::uint64_t>({1, H5Tget_size(file_type), H5Tget_size(memory_type)});
  std::uint64_t buffer_bytes =
      std::max(row_bytes, std::min(kDefaultBufferBytes, rows * row_bytes));
  Handle transfer(check(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate", what), H5Pclose);
  check(H5Pset_buffer(transfer, buffer_bytes, nullptr, nullptr), "H5Pset_buffer", what);
  return transfer;
}

void read_rows(hid_t dataset, hid_t memory_type, std::uint64_t rows, void* buf,
               std::string_view what) {
  if (rows == 0) return;
  Handle file_type(check(H5Dget_type(dataset), "H5Dget_type", what), H5Tclose);
  Handle transfer = table_transfer(file_type, memory_type, rows, what);
  check(H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, transfer, buf), "H5Dread", what);
}

void reclaim_vlen(hid_t type, std::uint64_t rows, void* buf) {
  if (rows == 0) return;
  hsize_t dims[1] = {rows};
  Handle space(H5Screate_simple(1, dims, nullptr), H5Sclose);
#if H5_VERSION_GE(1, 12, 0)
  H5Treclaim(type, space, H5P_DEFAULT, buf);
#else
  H5Dvlen_reclaim(type, space, H5P_DEFAULT, buf);
#endif
}

}  // namespace r3::h5
