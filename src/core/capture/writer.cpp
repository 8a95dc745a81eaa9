#include <unistd.h>

#include <cstring>
#include <ctime>
#include <optional>
#include <unordered_map>

#include "r3/capture.hpp"
#include "r3/error.hpp"
#include "r3/log.hpp"
#include "r3/version.hpp"
#include "schema.hpp"

namespace r3::capture {
namespace {

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

void write_device(hid_t root, const DeviceInfo& device) {
  h5::Handle group = h5::create_group(root, schema::kDevice, "/device");
  h5::write_string_attribute(group, "backend", device.backend);
  h5::write_string_attribute(group, "name", device.name);
  h5::write_string_attribute(group, "architecture", device.architecture);
  h5::write_int_attribute(group, "compute_capability_major", device.compute_capability_major);
  h5::write_int_attribute(group, "compute_capability_minor", device.compute_capability_minor);
  h5::write_int_attribute(group, "multiprocessor_count", device.multiprocessor_count);
  h5::write_uint_attribute(group, "memory_bytes", device.memory_bytes);
  h5::write_uint_attribute(group, "l2_cache_bytes", device.l2_cache_bytes);
  h5::write_double_attribute(group, "memory_bandwidth_gbs", device.memory_bandwidth_gbs);
  h5::write_string_attribute(group, "driver_version", device.driver_version);
  h5::write_string_attribute(group, "toolkit_version", device.toolkit_version);
}

// Small metadata tables are chunked too, so that their Fletcher-32 checksums catch damage.
h5::Handle table_creation(std::size_t rows) {
  h5::Handle create(h5::check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", "table"), H5Pclose);
  if (rows > 0) {
    hsize_t chunk[1] = {std::min<hsize_t>(rows, 4096)};
    h5::check(H5Pset_chunk(create, 1, chunk), "H5Pset_chunk", "table");
    h5::check(H5Pset_fletcher32(create), "H5Pset_fletcher32", "table");
  }
  return create;
}

template <class Row>
void write_table(hid_t parent, const char* name, hid_t memory_type, const std::vector<Row>& rows) {
  h5::Handle file_type = schema::packed(memory_type);
  hsize_t dims[1] = {rows.size()};
  h5::Handle space(h5::check(H5Screate_simple(1, dims, nullptr), "H5Screate_simple", name),
                   H5Sclose);
  h5::Handle create = table_creation(rows.size());
  h5::Handle dataset(
      h5::check(H5Dcreate2(parent, name, file_type, space, H5P_DEFAULT, create, H5P_DEFAULT),
                "H5Dcreate2", name),
      H5Dclose);
  if (!rows.empty()) {
    h5::Handle transfer = h5::table_transfer(file_type, memory_type, rows.size(), name);
    h5::check(H5Dwrite(dataset, memory_type, H5S_ALL, H5S_ALL, transfer, rows.data()),
              "H5Dwrite", name);
  }
}

void write_regions(hid_t parent, const char* name, const std::vector<Region>& regions) {
  std::vector<schema::RegionRow> rows(regions.size());
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const Region& region = regions[i];
    schema::RegionRow& row = rows[i];
    row.name = const_cast<char*>(region.name.c_str());
    row.kind = static_cast<std::uint8_t>(region.kind);
    row.element_type = static_cast<std::uint8_t>(region.element_type);
    row.address = region.address;
    row.size = region.size;
    std::string hex = region.content.hex();
    std::memcpy(row.content, hex.data(), sizeof row.content);
  }
  h5::Handle type = schema::region_memory_type();
  write_table(parent, name, type, rows);
}

void write_params(hid_t parent, const std::vector<Param>& params) {
  std::vector<schema::ParamRow> rows(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    rows[i].offset = params[i].offset;
    rows[i].size = params[i].size;
    rows[i].is_pointer = params[i].is_pointer ? 1 : 0;
    rows[i].type = const_cast<char*>(params[i].type.c_str());
  }
  h5::Handle type = schema::param_memory_type();
  write_table(parent, schema::kParams, type, rows);
}

}  // namespace

struct CaptureWriter::Impl {
  std::filesystem::path path;
  Options options;
  h5::Handle file;
  h5::Handle contents;
  h5::Handle kernels;
  std::unordered_map<Hash128, std::uint64_t> stored;  // content -> size
  std::vector<std::size_t> launch_counts;             // per kernel id
  std::vector<std::vector<Param>> params;             // per kernel id
  // Set when a failed write could not be undone: the file may hold a partial object, so the
  // writer takes nothing more and never marks the file complete.
  bool broken = false;

  ErrorContext context() const { return in_file(path.string()); }

  [[noreturn]] void fail(const std::string& message) const { throw Error(message, context()); }

  void require_usable() const {
    if (broken)
      fail("the capture writer stopped after a failed write; what was flushed before is kept");
    if (!file.valid()) fail("the capture is closed");
  }

  // `size` is checked unless it is nullopt (code images have no recorded size).
  void require_content(const Hash128& content, std::optional<std::uint64_t> size,
                       const std::string& what) const {
    auto it = stored.find(content);
    if (it == stored.end()) {
      fail(what + ": content " + content.hex() + " was not put into the capture first");
    }
    if (size && it->second != *size) {
      fail(what + ": size " + std::to_string(*size) + " differs from its content's size " +
           std::to_string(it->second));
    }
  }

  void check_regions(const std::vector<Region>& regions, const std::string& what) const {
    for (std::size_t i = 0; i < regions.size(); ++i) {
      std::string region = what + " region " + std::to_string(i);
      require_text(regions[i].name, region + " name");
      require_content(regions[i].content, regions[i].size, region + " '" + regions[i].name + "'");
    }
  }

  // HDF5 ends strings at the first NUL, so such a string would not read back as written.
  void require_text(const std::string& text, const std::string& what) const {
    if (text.find('\0') != std::string::npos) fail(what + " contains a NUL character");
  }

  // Runs `write`; when it throws, removes the object at `link` that it may have left half
  // written, so the file stays as it was. If even that fails, the writer is marked broken.
  template <class Write>
  void transaction(hid_t parent, const std::string& link, Write&& write) {
    try {
      write();
    } catch (...) {
      if (H5Lexists(parent, link.c_str(), H5P_DEFAULT) > 0 &&
          H5Ldelete(parent, link.c_str(), H5P_DEFAULT) < 0) {
        broken = true;
      }
      H5Eclear2(H5E_DEFAULT);
      throw;
    }
  }

  void close() {
    if (!file.valid()) return;
    if (!broken) h5::write_int_attribute(file, "complete", 1);
    contents.reset();
    kernels.reset();
    h5::check(H5Fflush(file, H5F_SCOPE_GLOBAL), "H5Fflush", "capture");
    file.reset();
  }
};

void CaptureWriter::release(std::unique_ptr<Impl>& impl) noexcept {
  if (!impl) return;
  try {
    h5::Session session(impl->path.string());
    try {
      impl->close();
    } catch (const std::exception& e) {
      log::error(e.what());
    }
    impl.reset();
  } catch (...) {
    // Nothing sensible is left to do in a destructor; the handles close at process exit.
  }
}

CaptureWriter::CaptureWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CaptureWriter::CaptureWriter(CaptureWriter&&) noexcept = default;

CaptureWriter& CaptureWriter::operator=(CaptureWriter&& other) noexcept {
  if (this != &other) {
    release(impl_);
    impl_ = std::move(other.impl_);
  }
  return *this;
}

CaptureWriter::~CaptureWriter() { release(impl_); }

CaptureWriter CaptureWriter::create(const std::filesystem::path& path, CaptureInfo info) {
  return create(path, std::move(info), Options{});
}

CaptureWriter CaptureWriter::create(const std::filesystem::path& path, CaptureInfo info,
                                    Options options) {
  h5::Session session(path.string());
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  for (const std::string* text :
       {&info.created, &info.host, &info.command_line, &info.r3_version, &info.device.backend,
        &info.device.name, &info.device.architecture, &info.device.driver_version,
        &info.device.toolkit_version}) {
    impl->require_text(*text, "capture information");
  }
  // HDF5 1.8 object formats carry checksums of their metadata; every HDF5 since 1.8 reads them.
  h5::Handle access(h5::check(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate", "file access"), H5Pclose);
  h5::check(H5Pset_libver_bounds(access, H5F_LIBVER_V18, H5F_LIBVER_V18), "H5Pset_libver_bounds",
            "file access");
  impl->file = h5::Handle(h5::check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access),
                                    "H5Fcreate", "cannot create the capture file"),
                          H5Fclose);
  if (info.created.empty()) info.created = utc_now_iso8601();
  if (info.host.empty()) info.host = host_name();
  if (info.r3_version.empty()) info.r3_version = std::string(version_string());
  hid_t root = impl->file;
  h5::write_string_attribute(root, "format", kFormatName);
  h5::write_int_attribute(root, "version", kFormatVersion);
  h5::write_int_attribute(root, "complete", 0);
  h5::write_string_attribute(root, "created", info.created);
  h5::write_string_attribute(root, "host", info.host);
  h5::write_string_attribute(root, "command_line", info.command_line);
  h5::write_string_attribute(root, "r3_version", info.r3_version);
  h5::write_int_attribute(root, "rank", info.rank);
  write_device(root, info.device);
  h5::write_string_attribute(root, schema::kChecksum, schema::checksum(info, kFormatVersion).hex());
  impl->contents = h5::create_group(root, schema::kContents, "/contents");
  impl->kernels = h5::create_group(root, schema::kKernels, "/kernels");
  h5::check(H5Fflush(root, H5F_SCOPE_GLOBAL), "H5Fflush", "capture");
  return CaptureWriter(std::move(impl));
}

Hash128 CaptureWriter::put_content(std::span<const std::byte> bytes) {
  Hash128 content = hash_bytes(bytes);
  h5::Session session(impl_->path.string());
  impl_->require_usable();
  if (impl_->stored.contains(content)) return content;
  h5::ByteDatasetOptions dataset{impl_->options.chunk_bytes, impl_->options.deflate_level};
  std::string name = content.hex();
  impl_->transaction(impl_->contents, name,
                     [&] { h5::write_bytes(impl_->contents, name, bytes, dataset); });
  impl_->stored.emplace(content, bytes.size());
  return content;
}

bool CaptureWriter::has_content(const Hash128& content) const {
  h5::Session session(impl_->path.string());
  return impl_->stored.contains(content);
}

std::size_t CaptureWriter::add_kernel(const Kernel& kernel) {
  h5::Session session(impl_->path.string());
  impl_->require_usable();
  if (!kernel.launches.empty()) {
    impl_->fail("kernel '" + kernel.name + "': add launches with add_launch, not add_kernel");
  }
  if (kernel.name.empty()) impl_->fail("a kernel needs a name");
  const std::string what = "kernel '" + kernel.name + "'";
  for (const std::string* text : {&kernel.name, &kernel.demangled_name, &kernel.kokkos_label}) {
    impl_->require_text(*text, what);
  }
  for (const auto& [choice, values] : kernel.kokkos_choices) {
    if (choice.empty() || choice.find_first_of("=;,") != std::string::npos || values.empty())
      impl_->fail(what + ": Kokkos choice '" + choice +
                  "' needs a name without '=', ';' or ',' "
                  "and at least one value");
  }
  for (const Param& param : kernel.params)
    impl_->require_text(param.type, what + " parameter type");
  for (const auto& [kind, content] : kernel.images) {
    if (kind.empty() ||
        kind.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
      impl_->fail(what + ": image kind '" + kind + "' must be lower-case letters, digits and '_'");
    }
    impl_->require_content(content, std::nullopt, what + ": image '" + kind + "'");
  }
  std::size_t id = impl_->launch_counts.size();
  const std::string name = schema::index_name(id);
  impl_->transaction(impl_->kernels, name, [&] {
    h5::Handle group = h5::create_group(impl_->kernels, name, "kernel group");
    h5::write_string_attribute(group, "name", kernel.name);
    h5::write_string_attribute(group, "demangled_name", kernel.demangled_name);
    h5::write_string_attribute(group, "kokkos_label", kernel.kokkos_label);
    if (!kernel.kokkos_choices.empty())
      h5::write_string_attribute(group, "kokkos_choices",
                                 kokkos_choices_text(kernel.kokkos_choices));
    for (const auto& [kind, content] : kernel.images) {
      h5::write_string_attribute(group, std::string(schema::kImageAttributePrefix) + kind,
                                 content.hex());
    }
    write_params(group, kernel.params);
    h5::write_string_attribute(group, schema::kChecksum, schema::checksum(kernel).hex());
    h5::create_group(group, schema::kLaunches, "launches group");
  });
  impl_->launch_counts.push_back(0);
  impl_->params.push_back(kernel.params);
  return id;
}

std::size_t CaptureWriter::add_launch(std::size_t kernel_id, const Launch& launch) {
  h5::Session session(impl_->path.string());
  impl_->require_usable();
  if (kernel_id >= impl_->launch_counts.size()) {
    impl_->fail("add_launch: no kernel with id " + std::to_string(kernel_id));
  }
  const std::size_t index = impl_->launch_counts[kernel_id];
  const std::string what =
      "kernel " + std::to_string(kernel_id) + " launch " + std::to_string(index);
  for (const Param& param : impl_->params[kernel_id]) {
    if (param.size > launch.args.size() || param.offset > launch.args.size() - param.size) {
      impl_->fail(what + ": parameter at offset " + std::to_string(param.offset) + " (" +
                  std::to_string(param.size) + " bytes) lies outside the " +
                  std::to_string(launch.args.size()) + " argument bytes");
    }
  }
  impl_->check_regions(launch.prologue, what + " prologue");
  impl_->check_regions(launch.globals, what + " globals");
  impl_->check_regions(launch.epilogue, what + " epilogue");

  const std::string launches =
      "/kernels/" + schema::index_name(kernel_id) + "/" + schema::kLaunches;
  h5::Handle parent = h5::open_group(impl_->file, launches, launches);
  const std::string name = schema::index_name(index);
  impl_->transaction(parent, name, [&] {
    h5::Handle group = h5::create_group(parent, name, launches + "/" + name);
    h5::write_uint_attribute(group, "sequence", launch.sequence);
    const std::uint32_t grid[3] = {launch.grid.x, launch.grid.y, launch.grid.z};
    const std::uint32_t block[3] = {launch.block.x, launch.block.y, launch.block.z};
    h5::write_uint32_array_attribute(group, "grid", grid);
    h5::write_uint32_array_attribute(group, "block", block);
    h5::write_uint_attribute(group, "shared_memory_bytes", launch.shared_memory_bytes);
    h5::write_uint_attribute(group, "stream", launch.stream);
    if (launch.app_time_us) h5::write_double_attribute(group, "app_time_us", *launch.app_time_us);
    h5::write_bytes(group, schema::kArgs, launch.args, h5::ByteDatasetOptions{});
    write_regions(group, schema::kPrologue, launch.prologue);
    write_regions(group, schema::kGlobals, launch.globals);
    write_regions(group, schema::kEpilogue, launch.epilogue);
    // Written last: a launch without its checksum was not finished.
    h5::write_string_attribute(group, schema::kChecksum, schema::checksum(launch).hex());
  });
  ++impl_->launch_counts[kernel_id];
  if (impl_->options.flush_each_launch) {
    h5::check(H5Fflush(impl_->file, H5F_SCOPE_GLOBAL), "H5Fflush", "capture");
  }
  return index;
}

void CaptureWriter::set_app_time(std::size_t kernel_id, std::size_t index, const Launch& launch) {
  h5::Session session(impl_->path.string());
  impl_->require_usable();
  if (kernel_id >= impl_->launch_counts.size() || index >= impl_->launch_counts[kernel_id]) {
    impl_->fail("set_app_time: kernel " + std::to_string(kernel_id) + " has no launch " +
                std::to_string(index));
  }
  if (!launch.app_time_us) impl_->fail("set_app_time: the launch has no application time");
  const std::string path = "/kernels/" + schema::index_name(kernel_id) + "/" + schema::kLaunches +
                           "/" + schema::index_name(index);
  h5::Handle group = h5::open_group(impl_->file, path, path);
  h5::write_double_attribute(group, "app_time_us", *launch.app_time_us);
  h5::write_string_attribute(group, schema::kChecksum, schema::checksum(launch).hex());
}

void CaptureWriter::flush() {
  h5::Session session(impl_->path.string());
  if (impl_->file.valid()) {
    h5::check(H5Fflush(impl_->file, H5F_SCOPE_GLOBAL), "H5Fflush", impl_->path.string());
  }
}

void CaptureWriter::close() {
  h5::Session session(impl_->path.string());
  impl_->close();
}

const std::filesystem::path& CaptureWriter::path() const { return impl_->path; }

}  // namespace r3::capture
