#include "region_names.hpp"

#include "r3/capture.hpp"

namespace r3::tune {

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
    const std::string named = capture::source_region_name(names, recorded);
    out += message.substr(at, begin - at);
    out += named == recorded ? recorded + "'" : named + "' (" + recorded + ")";
    at = end + 1;
  }
}

}  // namespace r3::tune
