#include "team_tuner.hpp"

#include <yaml-cpp/yaml.h>

#include "tuned_values.hpp"

namespace r3::kokkos {
namespace {

constexpr std::string_view kFormat = "r3-kokkos-team-limits 1";
constexpr std::int64_t kMaxVectorLength = 32;  // Kokkos::TeamPolicy<Cuda>::vector_length_max()

bool power_of_two(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// The largest team Kokkos allows with `vector_length` (team_size_max).
std::int64_t max_team_size(const TeamLimit& limit, std::int64_t vector_length) {
  return static_cast<std::int64_t>(limit.max_team_threads) / vector_length;
}

// The fraction Kokkos turns into index `i` of a list of `n`: size_t(n * fraction) == i.
double fraction_of(std::size_t i, std::size_t n) {
  return (static_cast<double>(i) + 0.5) / static_cast<double>(n);
}

}  // namespace

std::optional<TeamFractions> team_tuner_fractions(const TeamLimit& limit,
                                                  std::int64_t vector_length,
                                                  std::int64_t team_size, std::string& why) {
  if (!power_of_two(vector_length) || vector_length > kMaxVectorLength) {
    why = "vector length " + std::to_string(vector_length) +
          " is not a power of two up to 32, which Kokkos' tuner offers";
    return std::nullopt;
  }
  if (!power_of_two(limit.max_team_threads) || limit.max_team_threads < vector_length) {
    why = "the largest team Kokkos allows (" + std::to_string(limit.max_team_threads) +
          " threads) is not known here";
    return std::nullopt;
  }
  // The vector lengths, ascending (Kokkos keys a std::map by them).
  std::vector<std::int64_t> vectors;
  if (limit.auto_vector_length) {
    for (std::int64_t v = 1; v <= kMaxVectorLength; v *= 2)
      if (limit.auto_team_size || team_size <= max_team_size(limit, v)) vectors.push_back(v);
  } else {
    vectors.push_back(vector_length);  // the application's: the only one Kokkos offers
  }
  std::size_t vi = 0;
  while (vi < vectors.size() && vectors[vi] != vector_length) ++vi;
  if (vi == vectors.size()) {
    why = "Kokkos' tuner offers no vector length " + std::to_string(vector_length) +
          " with team size " + std::to_string(team_size);
    return std::nullopt;
  }
  // That vector length's team sizes, descending from the largest.
  std::vector<std::int64_t> teams;
  if (limit.auto_team_size) {
    for (std::int64_t t = max_team_size(limit, vector_length); t >= 1; t /= 2) teams.push_back(t);
  } else {
    teams.push_back(team_size);  // the application's
  }
  std::size_t ti = 0;
  while (ti < teams.size() && teams[ti] != team_size) ++ti;
  if (ti == teams.size()) {
    why = "Kokkos' tuner offers no team size " + std::to_string(team_size) +
          " with vector length " + std::to_string(vector_length) + " (at most " +
          std::to_string(max_team_size(limit, vector_length)) + ", powers of two)";
    return std::nullopt;
  }
  return TeamFractions{fraction_of(vi, vectors.size()), fraction_of(ti, teams.size())};
}

std::string team_limits_text(const std::vector<TeamLimit>& limits) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "format" << YAML::Value << std::string(kFormat);
  out << YAML::Key << "kernels" << YAML::Value << YAML::BeginSeq;
  for (const TeamLimit& l : limits) {
    out << YAML::BeginMap << YAML::Key << "label" << YAML::Value << YAML::DoubleQuoted << l.label
        << YAML::Key << "max_team_threads" << YAML::Value << l.max_team_threads << YAML::Key
        << "auto_team_size" << YAML::Value << l.auto_team_size << YAML::Key << "auto_vector_length"
        << YAML::Value << l.auto_vector_length << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::vector<TeamLimit> parse_team_limits(std::string_view text, const std::filesystem::path& file) {
  auto fail = [&](const YAML::Node& node, const std::string& what) {
    std::string at = file.string();
    if (node.Mark().line >= 0)
      at +=
          ":" + std::to_string(node.Mark().line + 1) + ":" + std::to_string(node.Mark().column + 1);
    throw TunedValuesError(at + ": " + what);
  };
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw TunedValuesError(file.string() + ": not YAML: " + e.msg);
  }
  if (!root.IsMap() || !root["format"] || root["format"].Scalar() != kFormat)
    fail(root, "format: expected '" + std::string(kFormat) + "'");
  std::vector<TeamLimit> limits;
  const YAML::Node kernels = root["kernels"];
  if (!kernels || !kernels.IsSequence()) fail(root, "kernels: expected a list");
  for (const YAML::Node& k : kernels) {
    TeamLimit l;
    try {
      l.label = k["label"].as<std::string>();
      l.max_team_threads = k["max_team_threads"].as<std::uint32_t>();
      l.auto_team_size = k["auto_team_size"].as<bool>();
      l.auto_vector_length = k["auto_vector_length"].as<bool>();
    } catch (const YAML::Exception&) {
      fail(k, "kernels[]: expected label, max_team_threads, auto_team_size, auto_vector_length");
    }
    limits.push_back(std::move(l));
  }
  return limits;
}

}  // namespace r3::kokkos
