// Kokkos' team-size tuner: the fractions the connector answers make it choose the tuned team.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <vector>

#include "team_tuner.hpp"
#include "tuned_values.hpp"

namespace {

using r3::kokkos::TeamLimit;

// Kokkos' TeamSizeTuner, as Kokkos_Tuners.hpp builds its space and reads a point: a map from
// vector length to its team sizes (all powers of two up to 32 when both are AUTO; those with
// room for the set team size when only the vector length is; the set one otherwise), each
// listing team_size_max, half of it, ... 1 (or the set team size), then index = size_t(n * f).
std::pair<std::int64_t, std::int64_t> kokkos_choice(const TeamLimit& limit,
                                                    std::int64_t set_vector_length,
                                                    std::int64_t set_team_size, double fv,
                                                    double ft) {
  std::map<std::int64_t, std::vector<std::int64_t>> space;
  auto team_max = [&](std::int64_t v) { return std::int64_t(limit.max_team_threads) / v; };
  std::vector<std::int64_t> vectors;
  if (limit.auto_vector_length) {
    for (std::int64_t v = 32; v >= 1; v /= 2)
      if (limit.auto_team_size || set_team_size <= team_max(v)) vectors.push_back(v);
  } else {
    vectors.push_back(set_vector_length);
  }
  for (std::int64_t v : vectors) {
    std::vector<std::int64_t> teams;
    if (limit.auto_team_size)
      for (std::int64_t t = team_max(v); t >= 1; t /= 2) teams.push_back(t);
    else
      teams.push_back(set_team_size);
    space[v] = teams;
  }
  std::vector<std::int64_t> roots;
  std::vector<std::vector<std::int64_t>> subs;
  for (const auto& [v, teams] : space) {
    roots.push_back(v);
    subs.push_back(teams);
  }
  const auto i = static_cast<std::size_t>(double(roots.size()) * fv);
  const auto j = static_cast<std::size_t>(double(subs[i].size()) * ft);
  return {roots.at(i), subs[i].at(j)};
}

TEST(KokkosTeamTuner, EveryTeamKokkosOffersIsChosenByTheFractionsAnswered) {
  for (std::uint32_t threads : {1024u, 512u, 256u}) {
    for (bool auto_team : {true, false}) {
      for (bool auto_vector : {true, false}) {
        if (!auto_team && !auto_vector) continue;  // Kokkos asks nothing then
        const TeamLimit limit{"k", threads, auto_team, auto_vector};
        int chosen = 0;
        for (std::int64_t v = 1; v <= 32; v *= 2) {
          for (std::int64_t t = 1; t * v <= 2048; t *= 2) {
            std::string why;
            const auto f = r3::kokkos::team_tuner_fractions(limit, v, t, why);
            if (!f) {
              EXPECT_FALSE(why.empty());
              // Only what Kokkos would never offer is refused.
              if (auto_team && auto_vector) {
                EXPECT_GT(t * v, std::int64_t(threads)) << why;
              }
              continue;
            }
            EXPECT_GE(f->vector_length, 0.0);
            EXPECT_LE(f->vector_length, 0.999);
            EXPECT_GE(f->team_size, 0.0);
            EXPECT_LE(f->team_size, 0.999);
            const auto [kv, kt] = kokkos_choice(limit, v, t, f->vector_length, f->team_size);
            EXPECT_EQ(kv, v) << threads << " threads, team " << t << ", vector " << v;
            EXPECT_EQ(kt, t) << threads << " threads, team " << t << ", vector " << v;
            ++chosen;
          }
        }
        EXPECT_GT(chosen, 0);
      }
    }
  }
}

TEST(KokkosTeamTuner, WhatKokkosWouldNeverOfferIsRefusedWithAReason) {
  const TeamLimit limit{"policies::matvec", 512, true, true};
  std::string why;
  EXPECT_FALSE(r3::kokkos::team_tuner_fractions(limit, 8, 128, why)) << "1024 threads of 512";
  EXPECT_NE(why.find("at most 64"), std::string::npos) << why;
  EXPECT_FALSE(r3::kokkos::team_tuner_fractions(limit, 3, 4, why));
  EXPECT_NE(why.find("power of two"), std::string::npos) << why;
  EXPECT_FALSE(r3::kokkos::team_tuner_fractions(limit, 64, 1, why));
  EXPECT_FALSE(r3::kokkos::team_tuner_fractions(limit, 4, 24, why)) << "no power of two";
  EXPECT_FALSE(r3::kokkos::team_tuner_fractions({"k", 0, true, true}, 4, 4, why));
  EXPECT_NE(why.find("not known"), std::string::npos) << why;
}

TEST(KokkosTeamTuner, TheLimitsFileReadsBackAndBadOnesNameTheFile) {
  const std::vector<TeamLimit> limits{{"policies::matvec", 1024, true, true},
                                      {"a \"quoted\": label", 256, false, true}};
  const auto back =
      r3::kokkos::parse_team_limits(r3::kokkos::team_limits_text(limits), "limits.yaml");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].label, limits[1].label);
  EXPECT_EQ(back[1].max_team_threads, 256u);
  EXPECT_FALSE(back[1].auto_team_size);
  EXPECT_TRUE(back[1].auto_vector_length);
  try {
    r3::kokkos::parse_team_limits("format: r3-kokkos-team-limits 1\nkernels:\n  - label: x\n",
                                  "limits.yaml");
    FAIL() << "a kernel without its limit was read";
  } catch (const r3::kokkos::TunedValuesError& e) {
    EXPECT_NE(std::string(e.what()).find("limits.yaml:3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(r3::kokkos::parse_team_limits("format: other 2\nkernels: []\n", "limits.yaml"),
               r3::kokkos::TunedValuesError);
}

}  // namespace
