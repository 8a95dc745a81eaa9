// Pair completion (Options::pair_completion): where two one-parameter changes of the best
// configuration were both measured near it, the configuration that makes both changes at once.
#pragma once

#include <vector>

#include "r3/bo/optimizer.hpp"
#include "r3/bo/space.hpp"

namespace r3::bo {

// The best observation is the first of the equal fastest successes; its near variations are the
// successes that differ from it in one parameter alone and took at most (1 + tolerance) times
// its time. Each two near variations that change different parameters make one completion: the
// best with both changes, where that is valid in the space, measured or not. Each completion
// once, in the order of the later of its two variations' observations (then the earlier's).
// None without a success.
//
// A smooth model predicts the completion from its three corners as if the two changes added up
// (in log time): each slower, both slower still. Where they interact it is wrong, and only a
// measurement says so: a tile's depth and its padding (bank conflicts) in a tiled matrix
// product, say, each slower alone and faster together.
std::vector<Configuration> pair_completions(const Space& space,
                                            const std::vector<Observation>& observations,
                                            double tolerance);

}  // namespace r3::bo
