#include "r3/hash.hpp"

#include <xxhash.h>

#include <cstdint>
#include <new>

#include "r3/error.hpp"

namespace r3 {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Hash128 from_xxh(XXH128_hash_t h) { return Hash128{h.high64, h.low64}; }

}  // namespace

std::string Hash128::hex() const {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = digits[(high >> (4 * i)) & 0xf];
    out[31 - i] = digits[(low >> (4 * i)) & 0xf];
  }
  return out;
}

std::optional<Hash128> Hash128::from_hex(std::string_view text) {
  if (text.size() != 32) return std::nullopt;
  Hash128 h;
  for (std::size_t i = 0; i < 32; ++i) {
    int v = hex_value(text[i]);
    if (v < 0) return std::nullopt;
    std::uint64_t& word = i < 16 ? h.high : h.low;
    word = (word << 4) | static_cast<std::uint64_t>(v);
  }
  return h;
}

Hash128 hash_bytes(const void* data, std::size_t size) {
  return from_xxh(XXH3_128bits(size == 0 ? nullptr : data, size));
}

Hash128 hash_bytes(std::span<const std::byte> bytes) {
  return hash_bytes(bytes.data(), bytes.size());
}

Hash128 hash_string(std::string_view text) { return hash_bytes(text.data(), text.size()); }

struct Hasher::State {
  XXH3_state_t* xxh = nullptr;
  State() : xxh(XXH3_createState()) {
    if (xxh == nullptr) throw std::bad_alloc();
    XXH3_128bits_reset(xxh);
  }
  ~State() { XXH3_freeState(xxh); }
};

Hasher::Hasher() : state_(std::make_unique<State>()) {}
Hasher::~Hasher() = default;
Hasher::Hasher(Hasher&&) noexcept = default;
Hasher& Hasher::operator=(Hasher&&) noexcept = default;

Hasher& Hasher::update(const void* data, std::size_t size) {
  if (size > 0 && XXH3_128bits_update(state_->xxh, data, size) != XXH_OK) {
    throw Error("XXH3_128bits_update failed");
  }
  return *this;
}

Hasher& Hasher::update(std::span<const std::byte> bytes) {
  return update(bytes.data(), bytes.size());
}

Hasher& Hasher::update(std::string_view text) { return update(text.data(), text.size()); }

Hasher& Hasher::update_field(std::string_view text) {
  std::uint64_t length = text.size();
  update(&length, sizeof length);
  return update(text);
}

Hash128 Hasher::digest() const { return from_xxh(XXH3_128bits_digest(state_->xxh)); }

}  // namespace r3
