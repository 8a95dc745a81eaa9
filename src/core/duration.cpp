// Durations as people write them in tune.yaml and read them in messages: "90", "90s", "1.5m",
// "2h", "1h30m", "250ms", "1d".
#include "r3/duration.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

namespace r3 {

std::optional<double> parse_duration(std::string_view text) {
  // Longer than any batch job; also keeps the value exactly printable by format_duration.
  constexpr double kLongest = 1e9;
  if (text.empty()) return std::nullopt;
  double total = 0;
  std::size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
      ++i;
    }
    if (start == i) return std::nullopt;
    double value = 0;
    auto [end, ec] = std::from_chars(text.data() + start, text.data() + i, value);
    if (ec != std::errc() || end != text.data() + i) return std::nullopt;
    std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit.empty()) {
      if (any || i != text.size()) return std::nullopt;  // a bare number stands alone
      scale = 1;
    } else if (unit == "ms") {
      scale = 1e-3;
    } else if (unit == "s") {
      scale = 1;
    } else if (unit == "m" || unit == "min") {
      scale = 60;
    } else if (unit == "h") {
      scale = 3600;
    } else if (unit == "d") {
      scale = 86400;
    } else {
      return std::nullopt;
    }
    total += value * scale;
    any = true;
  }
  if (!std::isfinite(total) || total < 0 || total > kLongest) return std::nullopt;
  return total;
}

std::string format_duration(double seconds) {
  auto whole = static_cast<std::uint64_t>(seconds);
  if (seconds < 1 || static_cast<double>(whole) != seconds) {
    // The shortest text that reads back as the same double.
    char text[64];
    auto [end, ec] = std::to_chars(text, text + sizeof text, seconds, std::chars_format::fixed);
    return std::string(text, end) + "s";
  }
  std::ostringstream out;
  std::uint64_t hours = whole / 3600, minutes = (whole % 3600) / 60, rest = whole % 60;
  if (hours > 0) out << hours << "h";
  if (minutes > 0) out << minutes << "m";
  if (rest > 0) out << rest << "s";
  return out.str();
}

}  // namespace r3
