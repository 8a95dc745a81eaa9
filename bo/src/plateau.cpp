#include "r3/bo/plateau.hpp"

#include <optional>

#include "history.hpp"

namespace r3::bo {
namespace {

// The single value index of an active ordinal parameter; nullopt for anything else.
std::optional<int> ordinal_index(const Space& space, const Configuration& c, std::size_t d) {
  if (space.parameters()[d].kind != Kind::ordinal || c.values[d].size() != 1) return std::nullopt;
  return c.values[d][0];
}

// Per parameter, +1 / -1 where both have an ordinal value and `to`'s is larger / smaller; 0
// elsewhere.
std::vector<int> move_direction(const Space& space, const Configuration& from,
                                const Configuration& to) {
  std::vector<int> direction(space.parameters().size(), 0);
  for (std::size_t d = 0; d < direction.size(); ++d) {
    const std::optional<int> a = ordinal_index(space, from, d), b = ordinal_index(space, to, d);
    if (a && b && *a != *b) direction[d] = *b > *a ? 1 : -1;
  }
  return direction;
}

bool moves(const std::vector<int>& direction) {
  for (int d : direction)
    if (d != 0) return true;
  return false;
}

// `from` with each parameter of `direction` (+1 / -1; 0: left alone) moved half the way
// towards the end of its range, or towards the nearest measured configuration that differs
// from `from` in that parameter alone, whichever is nearer.
std::optional<Configuration> bisected(const Space& space,
                                      const std::vector<Observation>& observations,
                                      const Configuration& from,
                                      const std::vector<int>& direction) {
  Configuration probe = from;
  const std::size_t parameters = space.parameters().size();
  for (std::size_t d = 0; d < parameters; ++d) {
    if (direction[d] == 0) continue;
    const int at = from.values[d][0], sign = direction[d];
    int end = sign > 0 ? static_cast<int>(space.parameters()[d].numbers.size()) - 1 : 0;
    for (const Observation& o : observations) {
      bool on_line = o.configuration.values[d].size() == 1;
      for (std::size_t e = 0; e < parameters && on_line; ++e)
        on_line = e == d || o.configuration.values[e] == from.values[e];
      if (!on_line) continue;
      const int measured = o.configuration.values[d][0];
      if ((measured - at) * sign > 0 && (measured - end) * sign < 0) end = measured;
    }
    const int span = (end - at) * sign;
    probe.values[d][0] = at + sign * ((span + 1) / 2);
  }
  if (probe == from || !space.valid(probe)) return std::nullopt;
  return probe;
}

}  // namespace

std::vector<Configuration> plateau_probes(const Space& space,
                                          const std::vector<Observation>& observations,
                                          double tolerance) {
  const std::optional<std::size_t> best = fastest_success(observations, observations.size());
  if (!best) return {};
  const Observation& top = observations[*best];
  auto within = [&](const Observation& o) {
    return o.outcome.ok && o.outcome.time <= top.outcome.time * (1 + tolerance);
  };
  // The other end of the step: the latest observation, where it came after the best, is within
  // the tolerance and moved an ordinal parameter; else the fastest success before the best.
  std::optional<std::size_t> other;
  const Observation& latest = observations.back();
  if (*best + 1 < observations.size() && within(latest) &&
      moves(move_direction(space, latest.configuration, top.configuration)))
    other = observations.size() - 1;
  else
    other = fastest_success(observations, *best);
  if (!other || !within(observations[*other])) return {};
  const Configuration& from = observations[*other].configuration;
  const std::vector<int> forward = move_direction(space, from, top.configuration);
  std::vector<int> backward(forward.size());
  for (std::size_t d = 0; d < forward.size(); ++d) backward[d] = -forward[d];
  std::vector<Configuration> probes;
  for (auto probe : {bisected(space, observations, top.configuration, forward),
                     bisected(space, observations, from, backward)})
    if (probe) probes.push_back(std::move(*probe));
  return probes;
}

}  // namespace r3::bo
