#include "schema.hpp"

#include <cstdlib>
#include <sstream>

namespace r3::config::schema {
namespace {

std::string shortest(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

std::string Range::requirement() const {
  if (std::isinf(high)) {
    if (low == 0) return low_open ? "must be positive" : "must not be negative";
    return std::string("must be ") + (low_open ? "above " : "at least ") + shortest(low);
  }
  return "must lie in " + std::string(low_open ? "(" : "[") + shortest(low) + ", " +
         shortest(high) + "]";
}

std::string Range::type(std::string_view noun) const {
  const std::string name(noun);
  if (std::isinf(low) && std::isinf(high)) return name;
  if (std::isinf(high)) {
    if (low == 0 && low_open) return "positive " + name;
    return name + (low_open ? " > " : " ≥ ") + shortest(low);
  }
  return name + " in " + (low_open ? "(" : "[") + shortest(low) + ", " + shortest(high) + "]";
}

std::string integer_type(std::int64_t low, std::int64_t high, std::int64_t type_high) {
  if (high >= type_high) return low == 0 ? "integer" : "integer ≥ " + std::to_string(low);
  return "integer " + std::to_string(low) + ".." + std::to_string(high);
}

std::string choice_type(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "`" : ", `") + name + "`";
  return out;
}

std::filesystem::path resolve(const std::filesystem::path& base, const std::string& text) {
  std::filesystem::path path(text);
  const char* home = std::getenv("HOME");
  if (home != nullptr && (text == "~" || text.rfind("~/", 0) == 0)) {
    path = std::filesystem::path(home) / text.substr(std::min<std::size_t>(2, text.size()));
  }
  return (path.is_absolute() ? path : base / path).lexically_normal();
}

void read_path(yaml::Map& map, const std::string& name, std::filesystem::path& out,
               const std::filesystem::path& base) {
  YAML::Node node = map.get(name);
  if (!node.IsDefined()) return;
  std::string text = yaml::decode_string(map.doc(), node, map.key(name));
  out = text.empty() ? std::filesystem::path() : resolve(base, text);
}

}  // namespace r3::config::schema
