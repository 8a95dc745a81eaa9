// What the optimizer and its probes (plateau.cpp, pairs.cpp) read off a history of observations.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "r3/bo/optimizer.hpp"

namespace r3::bo {

// The fastest success among observations [0, end): the first of equals; nullopt without one.
inline std::optional<std::size_t> fastest_success(const std::vector<Observation>& observations,
                                                  std::size_t end) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < end; ++i) {
    const Outcome& o = observations[i].outcome;
    if (o.ok && (!best || o.time < observations[*best].outcome.time)) best = i;
  }
  return best;
}

}  // namespace r3::bo
