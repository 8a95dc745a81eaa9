#include "session.hpp"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "r3/log.hpp"
#include "r3/record/call.hpp"

namespace r3::record::session {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::set<int> parse_ranks(const std::string& text) {
  std::set<int> ranks;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) continue;
    char* end = nullptr;
    long rank = std::strtol(item.c_str(), &end, 10);
    if (*end != '\0' || rank < 0) return {};
    ranks.insert(static_cast<int>(rank));
  }
  return ranks;
}

bool rank_selected() {
  std::set<int> ranks = parse_ranks(environment(kRanksVariable));
  if (ranks.empty()) return true;
  return ranks.contains(log::rank_from_environment().value_or(0));
}

bool recording_requested() { return !environment(kOutputVariable).empty() && rank_selected(); }

std::string rank_output_path(std::string path, int rank) {
  std::string suffix = ".rank" + std::to_string(rank);
  std::size_t dot = path.rfind('.');
  std::size_t slash = path.rfind('/');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
    path.insert(dot, suffix);
  } else {
    path += suffix;
  }
  return path;
}

std::string output_path() {
  std::string path = environment(kOutputVariable);
  if (auto rank = log::rank_from_environment()) return rank_output_path(path, *rank);
  return path;
}

std::string this_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), {});
  for (char& c : raw) {
    if (c == '\0') c = ' ';
  }
  while (!raw.empty() && raw.back() == ' ') raw.pop_back();
  return raw;
}

}  // namespace r3::record::session
