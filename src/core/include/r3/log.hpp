// Leveled logging to stderr, one whole line per message (safe from several threads), prefixed
// with the MPI rank when there is one:
//   r3[3]: warning: kernel 'k' launch 2: managed memory is not captured
// The level comes from R3_LOG_LEVEL (error, warning, info, debug, trace) or set_level();
// R3_LOG_TIME=1 adds seconds since start. The rank comes from set_rank() or, before that is
// called, from the launcher's environment (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID,
// FLUX_TASK_RANK).
#pragma once

#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace r3::log {

enum class Level { error = 0, warning = 1, info = 2, debug = 3, trace = 4 };

std::string_view to_string(Level level);
std::optional<Level> parse_level(std::string_view text);

void set_level(Level level);
Level level();
inline bool enabled(Level at) { return static_cast<int>(at) <= static_cast<int>(level()); }

// The rank shown in the prefix; a negative rank shows none.
void set_rank(int rank);
int rank();
// The rank the launcher gave this process, from its environment, if any.
std::optional<int> rank_from_environment();

// Where finished lines go (default: stderr). Tests capture output with this; nullptr restores.
using Sink = std::function<void(std::string_view line)>;
void set_sink(Sink sink);

// Writes one line (the prefix is added here, the newline too).
void write(Level level, std::string_view message);

template <class... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return std::move(out).str();
}

template <class... Parts>
void error(Parts&&... parts) {
  if (enabled(Level::error)) write(Level::error, concat(std::forward<Parts>(parts)...));
}
template <class... Parts>
void warning(Parts&&... parts) {
  if (enabled(Level::warning)) write(Level::warning, concat(std::forward<Parts>(parts)...));
}
template <class... Parts>
void info(Parts&&... parts) {
  if (enabled(Level::info)) write(Level::info, concat(std::forward<Parts>(parts)...));
}
template <class... Parts>
void debug(Parts&&... parts) {
  if (enabled(Level::debug)) write(Level::debug, concat(std::forward<Parts>(parts)...));
}
template <class... Parts>
void trace(Parts&&... parts) {
  if (enabled(Level::trace)) write(Level::trace, concat(std::forward<Parts>(parts)...));
}

}  // namespace r3::log
