// An enum's values and their one spelling, as a table: the text of a value, and the value of a
// text (nullopt for text that spells none).
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <utility>

namespace r3 {

template <class Enum, std::size_t N>
using EnumNames = std::array<std::pair<Enum, std::string_view>, N>;

template <class Enum, std::size_t N>
constexpr std::string_view name_of(const EnumNames<Enum, N>& names, Enum value) {
  for (const auto& [v, text] : names)
    if (v == value) return text;
  return "?";
}

template <class Enum, std::size_t N>
constexpr std::optional<Enum> value_named(const EnumNames<Enum, N>& names, std::string_view text) {
  for (const auto& [v, spelled] : names)
    if (spelled == text) return v;
  return std::nullopt;
}

}  // namespace r3
