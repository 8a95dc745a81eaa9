// Plateau bisection (Options::plateau_bisection): where the search's latest step moved less than
// a tolerance from its best, the configurations that look further along that step.
#pragma once

#include <vector>

#include "r3/bo/optimizer.hpp"
#include "r3/bo/space.hpp"

namespace r3::bo {

// A step on a plateau: the best observation (the first of equal fastest successes) and its other
// end, which is the latest observation where that came after the best, is a success within
// `tolerance` of the best's time and has another value of an ordinal parameter (a step that did
// not beat the best), else the fastest success before the best where that is within
// `tolerance` of it (a new best by less than that). The probes are, in order:
//  1. forward: each ordinal parameter the step changed goes half the way (rounded away from the
//     best) from the best's value towards the end of its range in the step's direction (from
//     the other end to the best), or towards the nearest value measured on that line (the best
//     with that parameter alone changed), where one is nearer;
//  2. backward: the same from the other end, in the opposite direction.
// A probe that leaves the space (a constraint, a condition) or does not move is left out, so
// there are 0-2. None where there is no such step, or the step changed no ordinal parameter
// (categorical values and sequences are not bisected).
std::vector<Configuration> plateau_probes(const Space& space,
                                          const std::vector<Observation>& observations,
                                          double tolerance);

}  // namespace r3::bo
