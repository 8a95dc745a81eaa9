#include "region_names.hpp"

namespace r3::tune {

std::string source_name(const std::vector<std::string>& names, const std::string& region) {
  for (std::size_t i = names.size(); i-- > 0;) {
    if (names[i].empty()) continue;
    const std::string arg = "arg" + std::to_string(i);
    for (std::size_t at = region.find(arg); at != std::string::npos; at = region.find(arg, at + 1)) {
      const std::size_t end = at + arg.size();
      const bool starts = at == 0 || region[at - 1] == '(';
      const bool ends = end == region.size() || region[end] == '+' || region[end] == ')';
      if (starts && ends) return region.substr(0, at) + names[i] + region.substr(end);
    }
  }
  return region;
}

std::string with_source_names(const std::vector<std::string>& names, const std::string& message) {
  if (names.empty()) return message;
  const std::string marker = "region '";
  std::string out;
  std::size_t at = 0;
  while (true) {
    const std::size_t found = message.find(marker, at);
    const std::size_t begin = found == std::string::npos ? found : found + marker.size();
    const std::size_t end = found == std::string::npos ? found : message.find('\'', begin);
    if (end == std::string::npos) return out + message.substr(at);
    const std::string recorded = message.substr(begin, end - begin);
    const std::string named = source_name(names, recorded);
    out += message.substr(at, begin - at);
    out += named == recorded ? recorded + "'" : named + "' (" + recorded + ")";
    at = end + 1;
  }
}

}  // namespace r3::tune
