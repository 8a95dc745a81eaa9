#include "plan.hpp"

#include <nlohmann/json.hpp>

#include "r3/error.hpp"

namespace r3::tune {

using nlohmann::json;

std::string Plan::encode() const {
  json levels_json = json::object();
  for (const auto& [level, configuration] : levels)
    levels_json[std::string(to_string(level))] = configuration.values;
  json j{{"levels", levels_json}};
  if (recorded) j["recorded"] = true;
  if (searched) j["searched"] = std::string(to_string(*searched));
  return j.dump();
}

Plan Plan::decode(std::string_view text) {
  try {
    const json j = json::parse(text);
    Plan plan;
    plan.recorded = j.value("recorded", false);
    if (j.contains("searched")) {
      const std::string name = j.at("searched").get<std::string>();
      plan.searched = parse_level(name);
      if (!plan.searched)
        throw FormatError("a candidate's plan names an unknown level '" + name + "'");
    }
    for (const auto& [name, values] : j.at("levels").items()) {
      std::optional<Level> level = parse_level(name);
      if (!level) throw FormatError("a candidate's plan names an unknown level '" + name + "'");
      plan.levels[*level] = bo::Configuration{values.get<std::vector<std::vector<int>>>()};
    }
    if (plan.searched && !plan.levels.contains(*plan.searched))
      throw FormatError("a candidate's plan has no point for the level it searched");
    return plan;
  } catch (const json::exception& e) {
    throw FormatError(std::string("a candidate's plan is not what the search writes: ") + e.what());
  }
}

}  // namespace r3::tune
