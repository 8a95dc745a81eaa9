#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <unordered_map>

#include "r3/capture.hpp"
#include "r3/error.hpp"
#include "r3/files.hpp"
#include "r3/version.hpp"
#include "schema.hpp"

namespace r3::capture {
namespace {

constexpr std::uint64_t kVerifySlabBytes = 64ull << 20;

struct ContentEntry {
  std::uint64_t size = 0;
  std::uint64_t stored_bytes = 0;
};

std::optional<std::size_t> parse_index(std::string_view text) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  std::size_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Children of `group` must be named 0..n-1; returns n.
std::size_t count_indexed_children(hid_t group, const std::string& where) {
  std::vector<std::string> names = h5::child_names(group, where);
  std::vector<bool> seen(names.size(), false);
  for (const std::string& name : names) {
    auto index = parse_index(name);
    if (!index || *index >= names.size() || seen[*index]) {
      throw FormatError(where + ": unexpected entry '" + name + "' (entries are numbered 0.." +
                        std::to_string(names.empty() ? 0 : names.size() - 1) + ")");
    }
    seen[*index] = true;
  }
  return names.size();
}

std::string optional_string(hid_t object, const std::string& name, const std::string& where) {
  return h5::attribute_exists(object, name) ? h5::read_string_attribute(object, name, where) : "";
}

Hash128 parse_hash(std::string_view text, const std::string& where) {
  auto hash = Hash128::from_hex(text);
  if (!hash) throw FormatError(where + ": '" + std::string(text) + "' is not a content hash");
  return *hash;
}

void verify_checksum(hid_t group, const Hash128& computed, const std::string& where) {
  Hash128 stored = parse_hash(h5::read_string_attribute(group, schema::kChecksum, where),
                              where + ": attribute 'checksum'");
  if (stored != computed) {
    throw FormatError(where + ": metadata is damaged (its checksum does not match)");
  }
}

DeviceInfo read_device(hid_t root) {
  const std::string where = "/device";
  h5::Handle group = h5::open_group(root, schema::kDevice, where);
  DeviceInfo device;
  device.backend = h5::read_string_attribute(group, "backend", where);
  device.name = h5::read_string_attribute(group, "name", where);
  device.architecture = h5::read_string_attribute(group, "architecture", where);
  device.compute_capability_major =
      static_cast<int>(h5::read_int_attribute(group, "compute_capability_major", where));
  device.compute_capability_minor =
      static_cast<int>(h5::read_int_attribute(group, "compute_capability_minor", where));
  device.multiprocessor_count =
      static_cast<int>(h5::read_int_attribute(group, "multiprocessor_count", where));
  device.memory_bytes = h5::read_uint_attribute(group, "memory_bytes", where);
  device.l2_cache_bytes = h5::read_uint_attribute(group, "l2_cache_bytes", where);
  device.memory_bandwidth_gbs = h5::read_double_attribute(group, "memory_bandwidth_gbs", where);
  device.driver_version = h5::read_string_attribute(group, "driver_version", where);
  device.toolkit_version = h5::read_string_attribute(group, "toolkit_version", where);
  return device;
}

// Reads the compound table `name` of `parent`, turning each row into a value with
// convert(row, "<path> row <i>"); the strings HDF5 allocated are freed however that ends.
template <class Row, class Convert>
auto read_table(hid_t parent, const char* name, const std::string& parent_path, hid_t type,
                Convert convert) {
  const std::string where = parent_path + "/" + name;
  h5::Handle dataset = h5::open_dataset(parent, name, where);
  h5::require_members(dataset, type, where);
  std::vector<Row> rows(h5::dataset_rows(dataset, where));
  struct Reclaim {
    hid_t type;
    std::vector<Row>& rows;
    ~Reclaim() { h5::reclaim_vlen(type, rows.size(), rows.data()); }
  } reclaim{type, rows};
  h5::read_rows(dataset, type, rows.size(), rows.data(), where);
  std::vector<decltype(convert(rows.front(), where))> out;
  out.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    out.push_back(convert(rows[i], where + " row " + std::to_string(i)));
  }
  return out;
}

Region to_region(const schema::RegionRow& row, const std::string& where) {
  // HDF5 converts enums by name and sets values it cannot map to all ones.
  if (row.kind > static_cast<std::uint8_t>(RegionKind::global)) {
    throw FormatError(where + ": unknown region kind");
  }
  if (row.element_type > static_cast<std::uint8_t>(ElementType::f64)) {
    throw FormatError(where + ": unknown element type");
  }
  std::string_view content(row.content, sizeof row.content);
  auto hash = Hash128::from_hex(content);
  if (!hash) {
    throw FormatError(where + ": content '" + std::string(content) + "' is not a content hash");
  }
  return Region{row.name != nullptr ? row.name : "",
                static_cast<RegionKind>(row.kind),
                row.address,
                row.size,
                static_cast<ElementType>(row.element_type),
                *hash};
}

std::vector<Region> read_regions(hid_t launch, const char* name, const std::string& launch_path) {
  h5::Handle type = schema::region_memory_type();
  return read_table<schema::RegionRow>(launch, name, launch_path, type, to_region);
}

std::vector<Param> read_params(hid_t kernel, const std::string& kernel_path) {
  h5::Handle type = schema::param_memory_type();
  return read_table<schema::ParamRow>(kernel, schema::kParams, kernel_path, type,
                                      [](const schema::ParamRow& row, const std::string&) {
                                        return Param{row.offset, row.size, row.is_pointer != 0,
                                                     row.type != nullptr ? row.type : ""};
                                      });
}

Dim3 read_dim3(hid_t group, const char* name, const std::string& where) {
  std::vector<std::uint32_t> values = h5::read_uint32_array_attribute(group, name, where, 3);
  return Dim3{values[0], values[1], values[2]};
}

Launch read_launch(hid_t launches, std::size_t index, const std::string& launches_path) {
  const std::string where = launches_path + "/" + schema::index_name(index);
  h5::Handle group = h5::open_group(launches, schema::index_name(index), where);
  Launch launch;
  launch.sequence = h5::read_uint_attribute(group, "sequence", where);
  launch.grid = read_dim3(group, "grid", where);
  launch.block = read_dim3(group, "block", where);
  std::uint64_t shared = h5::read_uint_attribute(group, "shared_memory_bytes", where);
  if (shared > UINT32_MAX) throw FormatError(where + ": shared_memory_bytes is out of range");
  launch.shared_memory_bytes = static_cast<std::uint32_t>(shared);
  launch.stream = h5::read_uint_attribute(group, "stream", where);
  if (h5::attribute_exists(group, "app_time_us")) {
    launch.app_time_us = h5::read_double_attribute(group, "app_time_us", where);
  }
  {
    const std::string args_where = where + "/" + schema::kArgs;
    h5::Handle args = h5::open_dataset(group, schema::kArgs, args_where);
    launch.args.resize(h5::byte_dataset_size(args, args_where, h5::Stored::uncompressed));
    h5::read_bytes(args, 0, launch.args, args_where);
  }
  launch.prologue = read_regions(group, schema::kPrologue, where);
  launch.globals = read_regions(group, schema::kGlobals, where);
  launch.epilogue = read_regions(group, schema::kEpilogue, where);
  verify_checksum(group, schema::checksum(launch), where);
  return launch;
}

// Every parameter of every launch lies inside that launch's argument bytes.
void check_params_fit(const Kernel& kernel, const std::string& where) {
  for (std::size_t l = 0; l < kernel.launches.size(); ++l) {
    std::uint64_t args = kernel.launches[l].args.size();
    for (const Param& p : kernel.params) {
      if (p.size > args || p.offset > args - p.size) {
        throw FormatError(where + " launch " + std::to_string(l) + ": parameter at offset " +
                          std::to_string(p.offset) + " (" + std::to_string(p.size) +
                          " bytes) lies outside the " + std::to_string(args) + " argument bytes");
      }
    }
  }
}

// `complete`: whether the writer finished. If not, a last launch it was writing when it stopped
// is left out (with a warning) instead of failing the whole capture.
Kernel read_kernel(hid_t kernels, std::size_t id, bool complete,
                   std::vector<std::string>& warnings) {
  const std::string where = "/kernels/" + schema::index_name(id);
  h5::Handle group = h5::open_group(kernels, schema::index_name(id), where);
  Kernel kernel;
  kernel.name = h5::read_string_attribute(group, "name", where);
  kernel.demangled_name = optional_string(group, "demangled_name", where);
  kernel.kokkos_label = optional_string(group, "kokkos_label", where);
  kernel.kokkos_choices =
      parse_kokkos_choices(optional_string(group, "kokkos_choices", where), where);
  for (const std::string& attribute : h5::attribute_names(group, where)) {
    if (attribute.rfind(schema::kImageAttributePrefix, 0) != 0) continue;
    std::string kind = attribute.substr(schema::kImageAttributePrefix.size());
    std::string hex = h5::read_string_attribute(group, attribute, where);
    kernel.images.emplace(kind, parse_hash(hex, where + ": image '" + kind + "'"));
  }
  kernel.params = read_params(group, where);
  verify_checksum(group, schema::checksum(kernel), where);
  const std::string launches_where = where + "/" + schema::kLaunches;
  h5::Handle launches = h5::open_group(group, schema::kLaunches, launches_where);
  std::size_t count = count_indexed_children(launches, launches_where);
  kernel.launches.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    try {
      kernel.launches.push_back(read_launch(launches, i, launches_where));
    } catch (const Error& e) {
      if (complete || i + 1 != count) throw;
      warnings.push_back(launches_where + "/" + std::to_string(i) +
                         " was being written when the writer stopped; left out (" + e.message() +
                         ")");
    }
  }
  check_params_fit(kernel, where);
  return kernel;
}

// The name a user types for a demangled function: without return type, template arguments and
// parameter list ("void ns::step<float>(float*, int)" -> "ns::step").
std::string base_name(std::string_view demangled) {
  int depth = 0;
  std::size_t start = 0;
  std::string out;
  for (std::size_t i = 0; i < demangled.size(); ++i) {
    char c = demangled[i];
    if (c == '<') {
      ++depth;
    } else if (c == '>') {
      --depth;
    } else if (depth == 0 && c == '(') {
      break;
    } else if (depth == 0 && c == ' ') {
      start = out.size() + 1;  // what came before was the return type
      out += c;
      continue;
    }
    if (depth == 0 && c != '>') out += c;
  }
  return out.substr(std::min(start, out.size()));
}

}  // namespace

std::string kokkos_choices_text(const std::map<std::string, std::vector<std::int64_t>>& choices) {
  std::string text;
  for (const auto& [name, values] : choices) {
    if (!text.empty()) text += ';';
    text += name + '=';
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (i > 0) text += ',';
      text += std::to_string(values[i]);
    }
  }
  return text;
}

std::map<std::string, std::vector<std::int64_t>> parse_kokkos_choices(std::string_view text,
                                                                      const std::string& where) {
  std::map<std::string, std::vector<std::int64_t>> choices;
  auto fail = [&](std::string_view item) -> void {
    throw FormatError(where + ": Kokkos choices: expected NAME=V1,V2,... separated by ';', got '" +
                      std::string(item) + "'");
  };
  while (!text.empty()) {
    const std::size_t end = std::min(text.find(';'), text.size());
    const std::string_view item = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const std::size_t eq = item.find('=');
    if (eq == 0 || eq == std::string_view::npos || eq + 1 == item.size()) fail(item);
    std::vector<std::int64_t>& values = choices[std::string(item.substr(0, eq))];
    std::string_view list = item.substr(eq + 1);
    while (!list.empty()) {
      const std::size_t comma = std::min(list.find(','), list.size());
      std::int64_t v = 0;
      const auto [ptr, ec] = std::from_chars(list.data(), list.data() + comma, v);
      if (ec != std::errc() || ptr != list.data() + comma) fail(item);
      values.push_back(v);
      list.remove_prefix(std::min(comma + 1, list.size()));
    }
  }
  return choices;
}

std::string instance_name(std::string_view demangled) {
  int angle = 0;
  std::size_t start = 0, end = demangled.size();
  for (std::size_t i = 0; i < demangled.size(); ++i) {
    const char c = demangled[i];
    if (c == '<') {
      ++angle;
    } else if (c == '>') {
      --angle;
    } else if (angle == 0 && c == '(') {
      end = i;
      break;
    } else if (angle == 0 && c == ' ') {
      start = i + 1;  // what came before was the return type
    }
  }
  return std::string(demangled.substr(start, end - start));
}

std::vector<std::string> template_arguments(std::string_view instance) {
  std::vector<std::string> arguments;
  const std::size_t open = instance.find('<');
  if (open == std::string_view::npos || instance.back() != '>') return arguments;
  std::string current;
  int depth = 0;
  for (char c : instance.substr(open + 1, instance.size() - open - 2)) {
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      arguments.push_back(current);
      current.clear();
      continue;
    }
    if (c != ' ' || !current.empty()) current += c;
  }
  arguments.push_back(current);
  return arguments;
}

struct CaptureReader::Impl {
  std::filesystem::path path;
  h5::Handle file;
  h5::Handle contents;
  int version = 0;
  bool complete = false;
  CaptureInfo info;
  std::vector<Kernel> kernels;
  std::unordered_map<Hash128, ContentEntry> content_index;
  std::vector<std::string> warnings;

  ErrorContext context() const { return in_file(path.string()); }

  void open_file() {
    // HDF5 would wait for good on a FIFO and read a device without end.
    if (auto why = not_a_readable_file(path)) throw IoError("open", "the capture " + *why, context());
    htri_t is_hdf5 = h5::is_hdf5_file(path.c_str());
    if (is_hdf5 < 0) {
      throw FormatError("cannot be read as HDF5 (HDF5: " + h5::error_stack_message() + ")",
                        context());
    }
    if (is_hdf5 == 0) {
      throw FormatError("not an HDF5 file (no HDF5 signature): expected an r3 capture", context());
    }
    hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (id < 0) {
      std::string detail = h5::error_stack_message();
      std::string hint;
      if (detail.find("lock") != std::string::npos) {
        hint = "; on file systems without locking, set HDF5_USE_FILE_LOCKING=FALSE";
      }
      throw FormatError(
          "damaged or truncated HDF5 file, cannot open it (HDF5: " + detail + ")" + hint,
          context());
    }
    file = h5::Handle(id, H5Fclose);
  }

  void read_header() {
    hid_t root = file;
    if (!h5::attribute_exists(root, "format")) {
      throw FormatError(
          "not an r3 capture: an HDF5 file without the root attribute 'format' "
          "(a foreign HDF5 file?)",
          context());
    }
    std::string format = h5::read_string_attribute(root, "format", "/");
    if (format != kFormatName) {
      throw FormatError("not an r3 capture: its format is '" + format + "', expected '" +
                            std::string(kFormatName) + "'",
                        context());
    }
    std::int64_t stored_version = h5::read_int_attribute(root, "version", "/");
    if (stored_version > kFormatVersion) {
      throw FormatError("capture format version " + std::to_string(stored_version) +
                            " was written by a newer r3; this r3 (" +
                            std::string(version_string()) + ") reads versions up to " +
                            std::to_string(kFormatVersion) + ": upgrade r3 to read it",
                        context());
    }
    if (stored_version < 1) {
      throw FormatError("invalid capture format version " + std::to_string(stored_version),
                        context());
    }
    version = static_cast<int>(stored_version);
    complete = h5::read_int_attribute(root, "complete", "/") != 0;
    info.created = h5::read_string_attribute(root, "created", "/");
    info.host = h5::read_string_attribute(root, "host", "/");
    info.command_line = h5::read_string_attribute(root, "command_line", "/");
    info.r3_version = h5::read_string_attribute(root, "r3_version", "/");
    info.rank = static_cast<int>(h5::read_int_attribute(root, "rank", "/"));
    info.device = read_device(root);
    verify_checksum(root, schema::checksum(info, version), "/");
  }

  void index_contents() {
    contents = h5::open_group(file, schema::kContents, "/contents");
    for (const std::string& name : h5::child_names(contents, "/contents")) {
      const std::string where = "/contents/" + name;
      Hash128 hash = parse_hash(name, where);
      if (hash.hex() != name)
        throw FormatError(where + ": a content name must be its lower-case hash");
      h5::Handle dataset = h5::open_dataset(contents, name, where);
      ContentEntry entry;
      entry.size = h5::byte_dataset_size(dataset, where, h5::Stored::compressed);
      entry.stored_bytes = H5Dget_storage_size(dataset);
      content_index.emplace(hash, entry);
    }
  }

  void read_kernels() {
    h5::Handle group = h5::open_group(file, schema::kKernels, "/kernels");
    std::size_t count = count_indexed_children(group, "/kernels");
    kernels.reserve(count);
    for (std::size_t id = 0; id < count; ++id) {
      try {
        kernels.push_back(read_kernel(group, id, complete, warnings));
      } catch (const Error& e) {
        if (complete || id + 1 != count) throw;
        warnings.push_back("/kernels/" + std::to_string(id) +
                           " was being written when the writer stopped; left out (" + e.message() +
                           ")");
      }
    }
  }

  void check_reference(const Hash128& content, std::uint64_t size, bool check_size,
                       const std::string& what) const {
    auto it = content_index.find(content);
    if (it == content_index.end()) {
      throw FormatError(what + " refers to content " + content.hex() +
                            ", which is not in /contents (dangling reference)",
                        context());
    }
    if (check_size && it->second.size != size) {
      throw FormatError(what + " has size " + std::to_string(size) + " but its content " +
                            content.hex() + " holds " + std::to_string(it->second.size) + " bytes",
                        context());
    }
  }

  // Every content a kernel image or a region refers to, each once, in a stable order.
  std::vector<Hash128> referenced_contents() const {
    std::vector<Hash128> out;
    for (const Kernel& kernel : kernels) {
      for (const auto& [kind, content] : kernel.images) out.push_back(content);
      for (const Launch& launch : kernel.launches) {
        for (const auto* table : {&launch.prologue, &launch.globals, &launch.epilogue}) {
          for (const Region& region : *table) out.push_back(region.content);
        }
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  void check_references() const {
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      const Kernel& kernel = kernels[k];
      std::string kernel_where = "/kernels/" + std::to_string(k) + " ('" + kernel.name + "')";
      for (const auto& [kind, content] : kernel.images) {
        check_reference(content, 0, false, kernel_where + " image '" + kind + "'");
      }
      for (std::size_t l = 0; l < kernel.launches.size(); ++l) {
        const Launch& launch = kernel.launches[l];
        std::string launch_where = kernel_where + " launch " + std::to_string(l);
        auto check_table = [&](const std::vector<Region>& regions, const char* table) {
          for (std::size_t r = 0; r < regions.size(); ++r) {
            check_reference(regions[r].content, regions[r].size, true,
                            launch_where + " " + table + " region " + std::to_string(r) + " '" +
                                regions[r].name + "'");
          }
        };
        check_table(launch.prologue, schema::kPrologue);
        check_table(launch.globals, schema::kGlobals);
        check_table(launch.epilogue, schema::kEpilogue);
      }
    }
  }

  const ContentEntry& entry(const Hash128& content) const {
    auto it = content_index.find(content);
    if (it == content_index.end()) {
      throw FormatError("content " + content.hex() + " is not in /contents", context());
    }
    return it->second;
  }

  // Reads [offset, offset + out.size()) of a content; HDF5 failures mean damage.
  void read_slab(hid_t dataset, const Hash128& content, std::uint64_t offset,
                 std::span<std::byte> out) const {
    try {
      h5::read_bytes(dataset, offset, out, "/contents/" + content.hex());
    } catch (const IoError& e) {
      throw FormatError("content " + content.hex() + " is damaged: " + e.message(), context());
    }
  }

  void check_hash(const Hash128& content, const Hash128& actual) const {
    if (actual != content) {
      throw FormatError(
          "content " + content.hex() + " is damaged: its bytes hash to " + actual.hex(), context());
    }
  }
};

CaptureReader::CaptureReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CaptureReader::CaptureReader(CaptureReader&&) noexcept = default;

void CaptureReader::release(std::unique_ptr<Impl>& impl) noexcept {
  if (!impl) return;
  try {
    h5::Session session(impl->path.string());
    impl.reset();
  } catch (...) {
    // Only the lock or the message string can fail here; the handles close at process exit.
  }
}

CaptureReader& CaptureReader::operator=(CaptureReader&& other) noexcept {
  if (this != &other) {
    release(impl_);
    impl_ = std::move(other.impl_);
  }
  return *this;
}

CaptureReader::~CaptureReader() { release(impl_); }

std::unique_ptr<CaptureReader::Impl> CaptureReader::read(const std::filesystem::path& path) {
  h5::Session session(path.string());
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->open_file();
  try {
    impl->read_header();
    impl->index_contents();
    impl->read_kernels();
    impl->check_references();
  } catch (const FormatError& e) {
    if (!e.context().file.empty()) throw;
    throw FormatError(e.message(), impl->context());
  } catch (const IoError& e) {
    // The file opened as HDF5, so a failing read inside it means damage.
    throw FormatError("damaged capture: " + e.message(), impl->context());
  } catch (const std::exception& e) {
    // E.g. an allocation for a size that damage made absurd.
    throw FormatError(std::string("damaged capture: ") + e.what(), impl->context());
  }
  return impl;
}

CaptureReader CaptureReader::open(const std::filesystem::path& path) {
  h5::rehearse_read(path.string(), "the capture", [&] { read(path); });
  return CaptureReader(read(path));
}

const std::filesystem::path& CaptureReader::path() const { return impl_->path; }
int CaptureReader::version() const { return impl_->version; }
bool CaptureReader::complete() const { return impl_->complete; }
const std::vector<std::string>& CaptureReader::warnings() const { return impl_->warnings; }
const CaptureInfo& CaptureReader::info() const { return impl_->info; }
const std::vector<Kernel>& CaptureReader::kernels() const { return impl_->kernels; }

std::optional<std::size_t> CaptureReader::find_kernel(std::string_view name) const {
  const auto& kernels = impl_->kernels;
  if (name.empty()) return std::nullopt;
  if (name[0] == '#') {
    auto index = parse_index(name.substr(1));
    if (index && *index < kernels.size()) return index;
    return std::nullopt;
  }
  std::vector<std::size_t> exact;
  std::vector<std::size_t> by_base_name;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const Kernel& k = kernels[i];
    // A template instance may be named as such ("MatrixMulCUDA<32>", "ns::k<float, 4>").
    std::string instance = k.demangled_name.empty() ? "" : instance_name(k.demangled_name);
    std::size_t scope = instance.find('<') == std::string::npos ? instance.rfind("::")
                                                                  : instance.rfind("::", instance.find('<'));
    if (k.name == name || k.demangled_name == name || k.kokkos_label == name ||
        (!instance.empty() &&
         (instance == name ||
          (scope != std::string::npos && instance.substr(scope + 2) == name)))) {
      exact.push_back(i);
    } else if (!k.demangled_name.empty()) {
      std::string base = base_name(k.demangled_name);
      std::size_t scope = base.rfind("::");
      if (base == name || (scope != std::string::npos && base.substr(scope + 2) == name)) {
        by_base_name.push_back(i);
      }
    }
  }
  const std::vector<std::size_t>& matches = exact.empty() ? by_base_name : exact;
  if (matches.empty()) return std::nullopt;
  if (matches.size() > 1) {
    std::string ids;
    for (std::size_t i : matches) ids += (ids.empty() ? "#" : ", #") + std::to_string(i);
    ErrorContext context = impl_->context();
    context.kernel = std::string(name);
    throw UnknownKernelError("names several kernels (" + ids + "); select one by index, e.g. '#" +
                                 std::to_string(matches.front()) + "'",
                             context);
  }
  return matches.front();
}

const Kernel& CaptureReader::kernel(std::string_view name) const {
  if (auto index = find_kernel(name)) return impl_->kernels[*index];
  std::string known;
  const std::size_t shown = std::min<std::size_t>(impl_->kernels.size(), 20);
  for (std::size_t i = 0; i < shown; ++i) {
    known += (i == 0 ? "" : ", ") + impl_->kernels[i].name;
  }
  if (impl_->kernels.size() > shown) known += ", ...";
  ErrorContext context = impl_->context();
  context.kernel = std::string(name);
  throw UnknownKernelError(impl_->kernels.empty() ? "is not in this capture, which holds no kernels"
                                                  : "is not in this capture; it holds: " + known,
                           context);
}

bool CaptureReader::has_content(const Hash128& content) const {
  return impl_->content_index.contains(content);
}

std::uint64_t CaptureReader::content_size(const Hash128& content) const {
  return impl_->entry(content).size;
}

void CaptureReader::read_content(const Hash128& content, std::span<std::byte> out) const {
  h5::Session session(impl_->path.string());
  const ContentEntry& entry = impl_->entry(content);
  if (out.size() != entry.size) {
    throw Error("read_content: buffer of " + std::to_string(out.size()) + " bytes for content " +
                    content.hex() + " of " + std::to_string(entry.size) + " bytes",
                impl_->context());
  }
  h5::Handle dataset = h5::open_dataset(impl_->contents, content.hex(), "/contents");
  impl_->read_slab(dataset, content, 0, out);
  impl_->check_hash(content, hash_bytes(out));
}

std::vector<std::byte> CaptureReader::read_content(const Hash128& content) const {
  std::vector<std::byte> bytes(content_size(content));
  read_content(content, bytes);
  return bytes;
}

void CaptureReader::verify_contents() const {
  h5::Session session(impl_->path.string());
  std::vector<std::byte> slab;
  for (const Hash128& content : impl_->referenced_contents()) {
    const ContentEntry& entry = impl_->entry(content);
    h5::Handle dataset = h5::open_dataset(impl_->contents, content.hex(), "/contents");
    Hasher hasher;
    for (std::uint64_t offset = 0; offset < entry.size; offset += kVerifySlabBytes) {
      slab.resize(std::min(kVerifySlabBytes, entry.size - offset));
      impl_->read_slab(dataset, content, offset, slab);
      hasher.update(slab);
    }
    impl_->check_hash(content, hasher.digest());
  }
}

CaptureStats CaptureReader::stats() const {
  CaptureStats stats;
  stats.kernels = impl_->kernels.size();
  for (const Kernel& kernel : impl_->kernels) {
    for (const auto& [kind, content] : kernel.images) {
      stats.referenced_bytes += impl_->entry(content).size;
    }
    stats.launches += kernel.launches.size();
    for (const Launch& launch : kernel.launches) {
      for (const auto* table : {&launch.prologue, &launch.globals, &launch.epilogue}) {
        stats.regions += table->size();
        for (const Region& region : *table) stats.referenced_bytes += region.size;
      }
    }
  }
  for (const auto& [content, entry] : impl_->content_index) {
    stats.unique_bytes += entry.size;
    stats.stored_bytes += entry.stored_bytes;
  }
  std::error_code ec;
  stats.file_bytes = std::filesystem::file_size(impl_->path, ec);
  if (ec) stats.file_bytes = 0;
  return stats;
}

}  // namespace r3::capture
