#include "r3/log.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "r3/elapsed.hpp"

namespace r3::log {
namespace {

struct State {
  std::atomic<int> level;
  std::atomic<int> rank;
  bool show_time = false;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::mutex mutex;  // guards sink and the write itself
  Sink sink;

  State() {
    Level initial = Level::info;
    if (const char* env = std::getenv("R3_LOG_LEVEL")) {
      if (auto parsed = parse_level(env)) initial = *parsed;
    }
    level.store(static_cast<int>(initial));
    rank.store(rank_from_environment().value_or(-1));
    if (const char* env = std::getenv("R3_LOG_TIME")) show_time = env[0] == '1';
  }
};

State& state() {
  static State instance;
  return instance;
}

}  // namespace

std::string_view to_string(Level level) {
  switch (level) {
    case Level::error:
      return "error";
    case Level::warning:
      return "warning";
    case Level::info:
      return "info";
    case Level::debug:
      return "debug";
    case Level::trace:
      return "trace";
  }
  return "?";
}

std::optional<Level> parse_level(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "error") return Level::error;
  if (lower == "warning" || lower == "warn") return Level::warning;
  if (lower == "info") return Level::info;
  if (lower == "debug") return Level::debug;
  if (lower == "trace") return Level::trace;
  return std::nullopt;
}

void set_level(Level level) { state().level.store(static_cast<int>(level)); }
Level level() { return static_cast<Level>(state().level.load(std::memory_order_relaxed)); }

void set_rank(int rank) { state().rank.store(rank); }
int rank() { return state().rank.load(); }

std::optional<int> rank_from_environment() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "FLUX_TASK_RANK"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    int rank = -1;
    std::string_view text(value);
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), rank);
    if (ec == std::errc() && end == text.data() + text.size() && rank >= 0) return rank;
  }
  return std::nullopt;
}

void set_sink(Sink sink) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.sink = std::move(sink);
}

void write(Level level, std::string_view message) {
  State& s = state();
  std::string line = "r3";
  if (int r = s.rank.load(); r >= 0) line += "[" + std::to_string(r) + "]";
  if (s.show_time) {
    double seconds = seconds_since(s.start);
    char stamp[32];
    std::snprintf(stamp, sizeof stamp, " +%.3fs", seconds);
    line += stamp;
  }
  line += ": ";
  if (level != Level::info) {
    line += to_string(level);
    line += ": ";
  }
  line += message;
  std::lock_guard lock(s.mutex);
  if (s.sink) {
    s.sink(line);
    return;
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace r3::log
