// Plateau bisection (Options::plateau_bisection): where the search's latest best beat the one
// before it by less than a tolerance, the configurations that look further along that move.
#pragma once

#include <vector>

#include "r3/bo/optimizer.hpp"
#include "r3/bo/space.hpp"

namespace r3::bo {

// The best observation (the first of equal fastest successes) and the fastest success before
// it. Where the best is faster than that earlier one by less than `tolerance` of its time, the
// move from the earlier one to the best is a step along a plateau, and the probes are, in order:
//  1. forward: each ordinal parameter the move changed goes half the way (rounded away from the
//     best) from the best's value towards the end of its range in the move's direction, or
//     towards the nearest value measured on that line (the best with that parameter alone
//     changed), where one is nearer;
//  2. backward: the same from the earlier configuration, in the opposite direction.
// A probe that leaves the space (a constraint, a condition) or does not move is left out, so
// there are 0-2. None where there is no earlier success, the step was larger, or the move
// changed no ordinal parameter (categorical values and sequences are not bisected).
std::vector<Configuration> plateau_probes(const Space& space,
                                          const std::vector<Observation>& observations,
                                          double tolerance);

}  // namespace r3::bo
