// What a candidate is to the search, typed: the application's recorded code, or a source with one
// configuration per level. Text only in the run database's `plan` column (encode/decode), which a
// resumed run reads back.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "levels.hpp"
#include "r3/bo/space.hpp"

namespace r3::tune {

struct Plan {
  bool recorded = false;  // the recorded code at the recorded shape: no level's point
  // The level whose optimiser proposed it; none: a source at its defaults.
  std::optional<Level> searched;
  std::map<Level, bo::Configuration> levels;  // every level of the source: the point it ran with

  // {"levels":{"compiler":[[...]],...},"recorded":true,"searched":"compiler"}, keys sorted.
  std::string encode() const;
  // Throws FormatError for text encode() did not write.
  static Plan decode(std::string_view text);
  friend bool operator==(const Plan&, const Plan&) = default;
};

}  // namespace r3::tune
