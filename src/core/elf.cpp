#include "r3/elf.hpp"

#include <elf.h>

#include <cstring>

#include "r3/error.hpp"

namespace r3 {
namespace {

template <typename T>
T read_at(std::span<const std::byte> bytes, std::uint64_t offset, const char* what) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
    throw Error(std::string("ELF image: ") + what + " at offset " + std::to_string(offset) +
                " runs past its end (" + std::to_string(bytes.size()) + " bytes)");
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

}  // namespace

bool is_elf64(std::span<const std::byte> image) {
  return image.size() >= sizeof(Elf64_Ehdr) && std::memcmp(image.data(), ELFMAG, SELFMAG) == 0 &&
         static_cast<unsigned char>(image[EI_CLASS]) == ELFCLASS64;
}

std::vector<ElfObject> elf_objects(std::span<const std::byte> elf) {
  if (!is_elf64(elf)) throw Error("not an ELF64 image (" + std::to_string(elf.size()) + " bytes)");
  const auto header = read_at<Elf64_Ehdr>(elf, 0, "the ELF header");
  std::vector<ElfObject> objects;
  for (std::uint64_t i = 0; i < header.e_shnum; ++i) {
    const auto symtab =
        read_at<Elf64_Shdr>(elf, header.e_shoff + i * header.e_shentsize, "a section header");
    if (symtab.sh_type != SHT_SYMTAB || symtab.sh_entsize < sizeof(Elf64_Sym)) continue;
    const auto strtab = read_at<Elf64_Shdr>(
        elf, header.e_shoff + std::uint64_t{symtab.sh_link} * header.e_shentsize,
        "the symbol names' section header");
    for (std::uint64_t at = 0; at + symtab.sh_entsize <= symtab.sh_size; at += symtab.sh_entsize) {
      const auto symbol = read_at<Elf64_Sym>(elf, symtab.sh_offset + at, "a symbol");
      if (ELF64_ST_TYPE(symbol.st_info) != STT_OBJECT || symbol.st_size == 0 ||
          symbol.st_shndx == SHN_UNDEF || symbol.st_name >= strtab.sh_size)
        continue;
      const std::uint64_t name_at = strtab.sh_offset + symbol.st_name;
      if (name_at >= elf.size()) throw Error("ELF image: a symbol name lies past its end");
      const char* begin = reinterpret_cast<const char*>(elf.data()) + name_at;
      std::string name(begin, strnlen(begin, elf.size() - name_at));
      // $str and friends are the compiler's (string literals of printf), not the program's.
      if (name.empty() || name[0] == '$' || name[0] == '.') continue;
      objects.push_back({std::move(name), symbol.st_size});
    }
  }
  return objects;
}

}  // namespace r3
