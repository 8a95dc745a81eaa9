#include "r3/base64.hpp"

#include <array>
#include <cstdint>

#include "r3/error.hpp"

namespace r3 {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The value of each character, -1 outside the alphabet.
constexpr std::array<int, 256> decoding_table() {
  std::array<int, 256> table{};
  for (int& v : table) v = -1;
  for (std::size_t i = 0; i < kAlphabet.size(); ++i)
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int>(i);
  return table;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto byte = [&](std::size_t k) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[k]));
  };
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[v >> shift & 63];
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    const std::uint32_t v = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += rest == 2 ? kAlphabet[v >> 6 & 63] : '=';
    out += '=';
  }
  return out;
}

std::string base64_decode(std::string_view text, std::string_view what) {
  static constexpr std::array<int, 256> kValues = decoding_table();
  auto bad = [&](const std::string& why) {
    return FormatError(std::string(what) + " is not base64: " + why);
  };
  if (text.size() % 4 != 0)
    throw bad("its length " + std::to_string(text.size()) + " is not a multiple of 4");
  std::size_t padding = 0;
  if (!text.empty() && text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const bool is_padding = last && k >= 4 - padding;
      const int value = is_padding ? 0 : kValues[static_cast<unsigned char>(c)];
      if (value < 0)
        throw bad("character " + std::to_string(i + k) + " ('" + std::string(1, c) +
                  "') is outside its alphabet");
      v = v << 6 | static_cast<std::uint32_t>(value);
    }
    out += static_cast<char>(v >> 16 & 0xff);
    if (!last || padding < 2) out += static_cast<char>(v >> 8 & 0xff);
    if (!last || padding < 1) out += static_cast<char>(v & 0xff);
  }
  return out;
}

}  // namespace r3
