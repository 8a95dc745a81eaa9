// Content hashing (XXH3, 128 bits). Region contents, code images and sources are named by the
// hash of their bytes: equal contents are stored and compiled once.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace r3 {

struct Hash128 {
  std::uint64_t high = 0;
  std::uint64_t low = 0;

  // 32 lower-case hexadecimal digits, high word first.
  std::string hex() const;
  // Parses exactly 32 hexadecimal digits (either case); nullopt for anything else.
  static std::optional<Hash128> from_hex(std::string_view text);

  friend auto operator<=>(const Hash128&, const Hash128&) = default;
};

Hash128 hash_bytes(std::span<const std::byte> bytes);
Hash128 hash_bytes(const void* data, std::size_t size);
Hash128 hash_string(std::string_view text);

// Incremental hashing: the digest of the concatenated updates equals hash_bytes of the whole.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(Hasher&&) noexcept;
  Hasher& operator=(Hasher&&) noexcept;

  Hasher& update(std::span<const std::byte> bytes);
  Hasher& update(const void* data, std::size_t size);
  Hasher& update(std::string_view text);
  // Length-prefixed, so that ("ab","c") and ("a","bc") hash differently when building keys.
  Hasher& update_field(std::string_view text);
  Hash128 digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace r3

template <>
struct std::hash<r3::Hash128> {
  std::size_t operator()(const r3::Hash128& h) const noexcept {
    return static_cast<std::size_t>(h.low ^ (h.high * 0x9e3779b97f4a7c15ULL));
  }
};
