// Durations as text: what tune.yaml accepts and what messages print.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace r3 {

// "90", "90s", "1.5m", "2h", "1h30m", "250ms", "1d" -> seconds; nullopt for anything else, and
// for more than 1e9 s. format_duration writes what parse_duration reads back exactly.
std::optional<double> parse_duration(std::string_view text);
std::string format_duration(double seconds);

}  // namespace r3
