// Space-filling initial designs over the unit hypercube (one coordinate per parameter, mapped
// into the space by Space::from_unit).
#pragma once

#include <cstdint>
#include <vector>

namespace r3::bo {

// n points of a Latin hypercube: in every dimension, exactly one point in each of n strata.
std::vector<std::vector<double>> latin_hypercube(std::size_t n, std::size_t dimensions,
                                                 std::uint64_t seed);

// The first n points of a Sobol sequence (direction numbers from primitive polynomials over
// GF(2)), randomised by a digital shift drawn from `seed`.
std::vector<std::vector<double>> scrambled_sobol(std::size_t n, std::size_t dimensions,
                                                 std::uint64_t seed);

}  // namespace r3::bo
