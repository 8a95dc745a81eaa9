// Kokkos' team-size tuner (Kokkos_Tuners.hpp, TeamSizeTuner) asks a tool, for a TeamPolicy with
// Kokkos::AUTO team size or vector length, not for a team size but for two fractions in
// [0, 0.999]: "<label>_vector_length" picks from the vector lengths it allows (ascending), then
// "<label>_team_size" from that vector length's team sizes (descending from the largest, halving
// down to 1). The lists depend on the largest team Kokkos allows for the kernel (its registers),
// which a tool never sees: `r3 apply` finds it on the GPU from the recorded kernel and hands it
// to the connector (TeamLimit), which turns a tuned (vector length, team size) into fractions.
// No Kokkos, HDF5 or r3::core dependency: this code is loaded into the user's application.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace r3::kokkos {

struct TeamLimit {
  std::string label;                   // the kernel's Kokkos label
  std::uint32_t max_team_threads = 0;  // team size x vector length Kokkos allows (a power of two)
  bool auto_team_size = false;         // the application's policy left it to Kokkos
  bool auto_vector_length = false;
};

struct TeamFractions {
  double vector_length = 0, team_size = 0;
};

// The fractions that make Kokkos' tuner choose `vector_length` and `team_size` for a kernel with
// `limit`; nullopt, with `why`, when it would never choose them (a dimension the application
// set, a team above the limit, no power of two).
std::optional<TeamFractions> team_tuner_fractions(const TeamLimit& limit,
                                                  std::int64_t vector_length,
                                                  std::int64_t team_size, std::string& why);

// The file `r3 apply` hands the connector (R3_KOKKOS_TEAM_LIMITS): YAML, "r3-kokkos-team-limits 1".
std::string team_limits_text(const std::vector<TeamLimit>& limits);
// Throws TunedValuesError naming the file and key.
std::vector<TeamLimit> parse_team_limits(std::string_view text, const std::filesystem::path& file);

}  // namespace r3::kokkos
