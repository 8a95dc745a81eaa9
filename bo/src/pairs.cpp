#include "r3/bo/pairs.hpp"

#include <optional>
#include <unordered_set>

#include "history.hpp"

namespace r3::bo {
namespace {

// The one parameter in which two configurations differ; nullopt for none or several.
std::optional<std::size_t> only_difference(const Configuration& a, const Configuration& b) {
  std::optional<std::size_t> differs;
  for (std::size_t d = 0; d < a.values.size(); ++d) {
    if (a.values[d] == b.values[d]) continue;
    if (differs) return std::nullopt;
    differs = d;
  }
  return differs;
}

}  // namespace

std::vector<Configuration> pair_completions(const Space& space,
                                            const std::vector<Observation>& observations,
                                            double tolerance) {
  const std::optional<std::size_t> best = fastest_success(observations, observations.size());
  if (!best) return {};
  const Configuration& top = observations[*best].configuration;
  const double limit = observations[*best].outcome.time * (1 + tolerance);
  struct Variation {
    std::size_t parameter;
    const Configuration* configuration;
  };
  std::vector<Variation> near;  // in observation order
  for (const Observation& o : observations) {
    if (!o.outcome.ok || o.outcome.time > limit) continue;
    if (auto d = only_difference(top, o.configuration)) near.push_back({*d, &o.configuration});
  }
  std::vector<Configuration> completions;
  std::unordered_set<Hash128> seen;
  for (std::size_t later = 1; later < near.size(); ++later) {
    for (std::size_t earlier = 0; earlier < later; ++earlier) {
      const std::size_t p = near[earlier].parameter, q = near[later].parameter;
      if (p == q) continue;
      Configuration c = top;
      c.values[p] = near[earlier].configuration->values[p];
      c.values[q] = near[later].configuration->values[q];
      if (space.valid(c) && seen.insert(c.hash()).second) completions.push_back(std::move(c));
    }
  }
  return completions;
}

}  // namespace r3::bo
