#include "code_images.hpp"

#include <cstring>

#include "r3/config.hpp"
#include "r3/error.hpp"

#if R3_HAVE_ZSTD
#include <zstd.h>
#endif

namespace r3::record::cuda {
namespace {

template <typename T>
T read_raw(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

constexpr std::uint32_t kFatbinWrapperMagic = 0x466243b1;
constexpr std::uint32_t kFatbinMagic = 0xba55ed50;
constexpr std::uint16_t kFatbinKindPtx = 1;
constexpr std::uint64_t kFatbinFlagLz4 = 0x2000;
constexpr std::uint32_t kZstdMagic = 0xfd2fb528;

}  // namespace

const std::byte* find_fatbin(const void* code) {
  if (!code) return nullptr;
  const auto* bytes = static_cast<const std::byte*>(code);
  const auto magic = read_raw<std::uint32_t>(bytes);
  if (magic == kFatbinMagic) return bytes;
  if (magic != kFatbinWrapperMagic) return nullptr;
  // The runtime's wrapper: {int magic; int version; const void* data; void* filename_or_fatbins}.
  const auto* data = read_raw<const std::byte*>(bytes + 8);
  return data && read_raw<std::uint32_t>(data) == kFatbinMagic ? data : nullptr;
}

std::vector<PtxEntry> fatbin_ptx_entries(const std::byte* fatbin) {
  // Header: magic u32, version u16, header size u16, size of the entries u64.
  const auto header_size = read_raw<std::uint16_t>(fatbin + 6);
  const auto entries_size = read_raw<std::uint64_t>(fatbin + 8);
  if (header_size < 16 || entries_size > (std::uint64_t{1} << 36))
    throw Error("fat binary: damaged header (header " + std::to_string(header_size) +
                " bytes, entries " + std::to_string(entries_size) + " bytes)");
  std::vector<PtxEntry> entries;
  const std::byte* at = fatbin + header_size;
  const std::byte* end = at + entries_size;
  while (at + 64 <= end) {
    // Entry: kind u16, version u16, header size u32, payload size u64, compressed size u32 at
    // 0x10, architecture u32 at 0x1c, flags u64 at 0x28, uncompressed size u64 at 0x38.
    const auto kind = read_raw<std::uint16_t>(at);
    const auto entry_header = read_raw<std::uint32_t>(at + 4);
    const auto payload_size = read_raw<std::uint64_t>(at + 8);
    if (entry_header < 64 || payload_size > entries_size ||
        entry_header + payload_size > std::uint64_t(end - at))
      throw Error("fat binary: an entry's sizes run past its end");
    const std::byte* payload = at + entry_header;
    if (kind == kFatbinKindPtx) {
      PtxEntry entry;
      entry.architecture = read_raw<std::uint32_t>(at + 0x1c);
      const auto compressed = read_raw<std::uint32_t>(at + 0x10);
      const auto flags = read_raw<std::uint64_t>(at + 0x28);
      const auto uncompressed = read_raw<std::uint64_t>(at + 0x38);
      std::uint64_t stored = payload_size;
      if (payload_size >= 4 && read_raw<std::uint32_t>(payload) == kZstdMagic) {
        entry.compression = PtxEntry::Compression::zstd;
      } else if (flags & kFatbinFlagLz4) {
        entry.compression = PtxEntry::Compression::lz4;
      }
      if (entry.compression != PtxEntry::Compression::none) {
        if (compressed > 0 && compressed <= payload_size) stored = compressed;
        entry.text_size = uncompressed;
      } else {
        entry.text_size = payload_size;
      }
      entry.payload.assign(payload, payload + stored);
      entries.push_back(std::move(entry));
    }
    at = payload + payload_size;
  }
  return entries;
}

std::string ptx_text(const PtxEntry& entry) {
  std::string text;
  switch (entry.compression) {
    case PtxEntry::Compression::none:
      text.assign(reinterpret_cast<const char*>(entry.payload.data()), entry.payload.size());
      break;
    case PtxEntry::Compression::zstd: {
#if R3_HAVE_ZSTD
      if (entry.text_size > (std::uint64_t{1} << 32))
        throw Error("fat binary: a PTX entry claims " + std::to_string(entry.text_size) + " bytes");
      text.resize(entry.text_size);
      const std::size_t n =
          ZSTD_decompress(text.data(), text.size(), entry.payload.data(), entry.payload.size());
      if (ZSTD_isError(n))
        throw Error(std::string("fat binary: ZSTD_decompress of a PTX entry: ") +
                    ZSTD_getErrorName(n));
      text.resize(n);
      break;
#else
      throw Error("the PTX is zstd-compressed and this r3 was built without zstd");
#endif
    }
    case PtxEntry::Compression::lz4:
      throw Error("the PTX is LZ4-compressed (nvcc before CUDA 13), which r3 does not read");
  }
  // Entries are padded with NULs.
  if (auto nul = text.find('\0'); nul != std::string::npos) text.resize(nul);
  return text;
}

std::vector<std::string> ptx_variables(std::string_view ptx) {
  std::vector<std::string> names;
  std::size_t line_start = 0;
  while (line_start < ptx.size()) {
    std::size_t line_end = ptx.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = ptx.size();
    std::string_view line = ptx.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    // Module scope only: declarations inside functions are indented or follow a '{'.
    if (line.starts_with(".visible ")) line.remove_prefix(9);
    if (!line.starts_with(".global ") && !line.starts_with(".const ")) continue;
    const std::size_t end = line.find_first_of("[;=");
    if (end == std::string_view::npos) continue;
    std::string_view head = line.substr(0, end);
    while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
    const std::size_t space = head.rfind(' ');
    const std::string_view name = space == std::string_view::npos ? head : head.substr(space + 1);
    if (!name.empty() && name[0] != '.' && name[0] != '$') names.emplace_back(name);
  }
  return names;
}

bool ptx_defines_entry(std::string_view ptx, std::string_view name) {
  for (std::size_t at = ptx.find(".entry "); at != std::string_view::npos;
       at = ptx.find(".entry ", at + 1)) {
    std::size_t begin = at + 7;
    while (begin < ptx.size() && ptx[begin] == ' ') ++begin;
    if (ptx.substr(begin, name.size()) != name) continue;
    const std::size_t after = begin + name.size();
    if (after < ptx.size() && (ptx[after] == '(' || ptx[after] == ' ' || ptx[after] == '\n'))
      return true;
  }
  return false;
}

std::vector<std::string> parameter_types(std::string_view demangled) {
  if (demangled.empty() || demangled.back() != ')') return {};
  // The list is what the final ')' closes; template arguments may hold parentheses too.
  int depth = 0;
  std::size_t open = std::string_view::npos;
  for (std::size_t i = demangled.size(); i-- > 0;) {
    if (demangled[i] == ')') ++depth;
    if (demangled[i] == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  if (open == std::string_view::npos) return {};
  const std::string_view list = demangled.substr(open + 1, demangled.size() - open - 2);
  std::vector<std::string> types;
  if (list.empty() || list == "void") return types;
  std::string current;
  depth = 0;
  for (char c : list) {
    if (c == '<' || c == '(' || c == '[') ++depth;
    if (c == '>' || c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      types.push_back(current);
      current.clear();
      continue;
    }
    if (c == ' ' && current.empty()) continue;
    current += c;
  }
  types.push_back(current);
  return types;
}

capture::ElementType pointee_element_type(std::string_view type) {
  using capture::ElementType;
  auto trim = [](std::string_view t) {
    while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    return t;
  };
  type = trim(type);
  // Qualifiers of the pointer itself ("float* const", "float* __restrict__").
  for (std::string_view qualifier : {"__restrict__", "__restrict", "const", "volatile"}) {
    if (type.ends_with(qualifier)) type = trim(type.substr(0, type.size() - qualifier.size()));
  }
  if (!type.ends_with('*')) return ElementType::unknown;
  // The pointee without cv-qualifiers and with single spaces: "float const" -> "float".
  std::string text(type.substr(0, type.size() - 1));
  for (std::string_view qualifier : {"const", "volatile"}) {
    for (std::size_t at; (at = text.find(qualifier)) != std::string::npos;)
      text.erase(at, qualifier.size());
  }
  std::string collapsed;
  for (char c : text) {
    if (c == ' ' && (collapsed.empty() || collapsed.back() == ' ')) continue;
    collapsed += c;
  }
  const std::string pointee(trim(collapsed));
  if (pointee.ends_with('*')) return ElementType::u64;  // a table of pointers
  static const std::pair<std::string_view, ElementType> kTypes[] = {
      {"float", ElementType::f32},
      {"double", ElementType::f64},
      {"__half", ElementType::f16},
      {"half", ElementType::f16},
      {"__nv_bfloat16", ElementType::bf16},
      {"signed char", ElementType::i8},
      {"unsigned char", ElementType::u8},
      {"short", ElementType::i16},
      {"unsigned short", ElementType::u16},
      {"int", ElementType::i32},
      {"unsigned int", ElementType::u32},
      {"long", ElementType::i64},
      {"unsigned long", ElementType::u64},
      {"long long", ElementType::i64},
      {"unsigned long long", ElementType::u64},
  };
  for (const auto& [name, element] : kTypes)
    if (pointee == name) return element;
  // CUDA's vector types hold their components one after the other: compared per component, so
  // that floating-point tolerances apply to each (a float2 array is an f32 array).
  static const std::pair<std::string_view, ElementType> kVectors[] = {
      {"float", ElementType::f32},      {"double", ElementType::f64},
      {"__half", ElementType::f16},     {"__nv_bfloat16", ElementType::bf16},
      {"uchar", ElementType::u8},       {"char", ElementType::i8},
      {"ushort", ElementType::u16},     {"short", ElementType::i16},
      {"uint", ElementType::u32},       {"int", ElementType::i32},
      {"ulonglong", ElementType::u64},  {"longlong", ElementType::i64},
      {"ulong", ElementType::u64},      {"long", ElementType::i64},
  };
  for (const auto& [name, element] : kVectors) {
    if (!pointee.starts_with(name)) continue;
    const std::string_view count = std::string_view(pointee).substr(name.size());
    if (count == "1" || count == "2" || count == "3" || count == "4") return element;
  }
  return ElementType::unknown;
}

}  // namespace r3::record::cuda
