// bo/ tests' helpers: evenly spaced parameter values, a configuration's numeric value, and
// random configurations encoded with their times.
#pragma once

#include <cstddef>
#include <functional>
#include <random>
#include <variant>
#include <vector>

#include "gp.hpp"
#include "r3/bo/space.hpp"

namespace r3::bo::test {

// n values from low to high, evenly spaced (both ends included).
inline std::vector<double> grid(double low, double high, int n) {
  std::vector<double> values;
  for (int i = 0; i < n; ++i) values.push_back(low + (high - low) * i / (n - 1));
  return values;
}

// The value of parameter i of c, a number.
inline double value(const Space& space, const Configuration& c, std::size_t i) {
  return std::get<double>(*space.value(c, i));
}

// `count` configurations drawn from `space`, encoded, and the time of each.
struct Sampled {
  std::vector<Encoded> x;
  std::vector<double> times;
};
inline Sampled sample_times(const Space& space, const Encoder& encoder, std::mt19937_64& rng,
                            int count, const std::function<double(const Configuration&)>& time) {
  Sampled out;
  for (int i = 0; i < count; ++i) {
    const Configuration c = space.sample(rng);
    out.x.push_back(encoder.encode(c));
    out.times.push_back(time(c));
  }
  return out;
}

}  // namespace r3::bo::test
