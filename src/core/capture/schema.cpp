#include "schema.hpp"

#include <cstddef>

namespace r3::capture {

std::string_view to_string(ElementType type) {
  switch (type) {
    case ElementType::unknown:
      return "unknown";
    case ElementType::u8:
      return "u8";
    case ElementType::i8:
      return "i8";
    case ElementType::u16:
      return "u16";
    case ElementType::i16:
      return "i16";
    case ElementType::u32:
      return "u32";
    case ElementType::i32:
      return "i32";
    case ElementType::u64:
      return "u64";
    case ElementType::i64:
      return "i64";
    case ElementType::f16:
      return "f16";
    case ElementType::bf16:
      return "bf16";
    case ElementType::f32:
      return "f32";
    case ElementType::f64:
      return "f64";
  }
  return "unknown";
}

std::optional<ElementType> parse_element_type(std::string_view text) {
  for (ElementType type : kAllElementTypes) {
    if (to_string(type) == text) return type;
  }
  return std::nullopt;
}

std::size_t element_size(ElementType type) {
  switch (type) {
    case ElementType::u16:
    case ElementType::i16:
    case ElementType::f16:
    case ElementType::bf16:
      return 2;
    case ElementType::u32:
    case ElementType::i32:
    case ElementType::f32:
      return 4;
    case ElementType::u64:
    case ElementType::i64:
    case ElementType::f64:
      return 8;
    default:
      return 1;
  }
}

bool is_floating_point(ElementType type) {
  return type == ElementType::f16 || type == ElementType::bf16 || type == ElementType::f32 ||
         type == ElementType::f64;
}

std::string_view to_string(RegionKind kind) {
  return kind == RegionKind::global ? "global" : "allocation";
}

namespace schema {
namespace {

// HDF5 enums carry their names into the file, so h5dump and h5py show "f32", not 11, and a
// reader converting by name refuses a value it does not know.
h5::Handle element_type_enum() {
  h5::Handle type(h5::check(H5Tenum_create(H5T_NATIVE_UINT8), "H5Tenum_create", "element type"),
                  H5Tclose);
  for (ElementType element : kAllElementTypes) {
    auto value = static_cast<std::uint8_t>(element);
    std::string name(to_string(element));
    h5::check(H5Tenum_insert(type, name.c_str(), &value), "H5Tenum_insert", "element type");
  }
  return type;
}

h5::Handle region_kind_enum() {
  h5::Handle type(h5::check(H5Tenum_create(H5T_NATIVE_UINT8), "H5Tenum_create", "region kind"),
                  H5Tclose);
  for (RegionKind kind : {RegionKind::allocation, RegionKind::global}) {
    auto value = static_cast<std::uint8_t>(kind);
    std::string name(to_string(kind));
    h5::check(H5Tenum_insert(type, name.c_str(), &value), "H5Tenum_insert", "region kind");
  }
  return type;
}

void insert(hid_t compound, const char* name, std::size_t offset, hid_t type) {
  h5::check(H5Tinsert(compound, name, offset, type), "H5Tinsert", name);
}

}  // namespace

h5::Handle region_memory_type() {
  h5::Handle type(h5::check(H5Tcreate(H5T_COMPOUND, sizeof(RegionRow)), "H5Tcreate", "region row"),
                  H5Tclose);
  h5::Handle name = h5::variable_string_type();
  h5::Handle kind = region_kind_enum();
  h5::Handle element = element_type_enum();
  h5::Handle content(h5::check(H5Tcopy(H5T_C_S1), "H5Tcopy", "content"), H5Tclose);
  h5::check(H5Tset_size(content, 32), "H5Tset_size", "content");
  h5::check(H5Tset_strpad(content, H5T_STR_NULLPAD), "H5Tset_strpad", "content");
  insert(type, "name", offsetof(RegionRow, name), name);
  insert(type, "kind", offsetof(RegionRow, kind), kind);
  insert(type, "element_type", offsetof(RegionRow, element_type), element);
  insert(type, "address", offsetof(RegionRow, address), H5T_NATIVE_UINT64);
  insert(type, "size", offsetof(RegionRow, size), H5T_NATIVE_UINT64);
  insert(type, "content", offsetof(RegionRow, content), content);
  return type;
}

h5::Handle param_memory_type() {
  h5::Handle type(h5::check(H5Tcreate(H5T_COMPOUND, sizeof(ParamRow)), "H5Tcreate", "param row"),
                  H5Tclose);
  h5::Handle text = h5::variable_string_type();
  insert(type, "offset", offsetof(ParamRow, offset), H5T_NATIVE_UINT64);
  insert(type, "size", offsetof(ParamRow, size), H5T_NATIVE_UINT64);
  insert(type, "is_pointer", offsetof(ParamRow, is_pointer), H5T_NATIVE_UINT8);
  insert(type, "type", offsetof(ParamRow, type), text);
  return type;
}

h5::Handle packed(hid_t memory_type) {
  h5::Handle type(h5::check(H5Tcopy(memory_type), "H5Tcopy", "table type"), H5Tclose);
  h5::check(H5Tpack(type), "H5Tpack", "table type");
  return type;
}

namespace {

template <class T>
void number(Hasher& h, T value) {
  h.update(&value, sizeof value);
}

void regions(Hasher& h, const std::vector<Region>& table) {
  number(h, table.size());
  for (const Region& r : table) {
    h.update_field(r.name);
    number(h, static_cast<std::uint8_t>(r.kind));
    number(h, static_cast<std::uint8_t>(r.element_type));
    number(h, r.address);
    number(h, r.size);
    number(h, r.content.high);
    number(h, r.content.low);
  }
}

}  // namespace

Hash128 checksum(const CaptureInfo& info, int version) {
  Hasher h;
  number(h, version);
  for (const std::string* field :
       {&info.created, &info.host, &info.command_line, &info.r3_version, &info.device.backend,
        &info.device.name, &info.device.architecture, &info.device.driver_version,
        &info.device.toolkit_version}) {
    h.update_field(*field);
  }
  number(h, info.rank);
  number(h, info.device.compute_capability_major);
  number(h, info.device.compute_capability_minor);
  number(h, info.device.multiprocessor_count);
  number(h, info.device.memory_bytes);
  number(h, info.device.l2_cache_bytes);
  number(h, info.device.memory_bandwidth_gbs);
  return h.digest();
}

Hash128 checksum(const Kernel& kernel) {
  Hasher h;
  h.update_field(kernel.name);
  h.update_field(kernel.demangled_name);
  h.update_field(kernel.kokkos_label);
  // Only where there are any: captures written before they were recorded keep their checksum.
  if (!kernel.kokkos_choices.empty())
    h.update_field("kokkos_choices=" + kokkos_choices_text(kernel.kokkos_choices));
  number(h, kernel.images.size());
  for (const auto& [kind, content] : kernel.images) {
    h.update_field(kind);
    number(h, content.high);
    number(h, content.low);
  }
  number(h, kernel.params.size());
  for (const Param& p : kernel.params) {
    number(h, p.offset);
    number(h, p.size);
    number(h, static_cast<std::uint8_t>(p.is_pointer));
    h.update_field(p.type);
  }
  return h.digest();
}

Hash128 checksum(const Launch& launch) {
  Hasher h;
  number(h, launch.sequence);
  for (const Dim3* d : {&launch.grid, &launch.block}) {
    number(h, d->x);
    number(h, d->y);
    number(h, d->z);
  }
  number(h, launch.shared_memory_bytes);
  number(h, launch.stream);
  number(h, static_cast<std::uint8_t>(launch.app_time_us.has_value()));
  number(h, launch.app_time_us.value_or(0.0));
  number(h, launch.args.size());
  h.update(launch.args);
  regions(h, launch.prologue);
  regions(h, launch.globals);
  regions(h, launch.epilogue);
  return h.digest();
}

std::string index_name(std::size_t index) { return std::to_string(index); }

}  // namespace schema
std::string source_region_name(const std::vector<std::string>& names, const std::string& region) {
  for (std::size_t i = names.size(); i-- > 0;) {
    if (names[i].empty()) continue;
    const std::string arg = "arg" + std::to_string(i);
    for (std::size_t at = region.find(arg); at != std::string::npos; at = region.find(arg, at + 1)) {
      const std::size_t end = at + arg.size();
      const bool starts = at == 0 || region[at - 1] == '(';
      const bool ends = end == region.size() || region[end] == '+' || region[end] == ')';
      if (starts && ends) return region.substr(0, at) + names[i] + region.substr(end);
    }
  }
  return region;
}

}  // namespace r3::capture
