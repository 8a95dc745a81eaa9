#include "r3/bo/design.hpp"

#include <algorithm>
#include <numeric>
#include <random>

#include "r3/error.hpp"

namespace r3::bo {
namespace {

using Polynomial = std::uint32_t;  // bit i is the coefficient of x^i, over GF(2)

int degree(Polynomial p) { return 31 - __builtin_clz(p); }

Polynomial multiply_mod(Polynomial a, Polynomial b, Polynomial modulus) {
  const int d = degree(modulus);
  Polynomial result = 0;
  while (b != 0) {
    if (b & 1u) result ^= a;
    b >>= 1;
    a <<= 1;
    if (a & (1u << d)) a ^= modulus;
  }
  return result;
}

Polynomial power_of_x(std::uint64_t exponent, Polynomial modulus) {
  Polynomial result = 1, base = 2;  // base = x
  while (exponent > 0) {
    if (exponent & 1u) result = multiply_mod(result, base, modulus);
    base = multiply_mod(base, base, modulus);
    exponent >>= 1;
  }
  return result;
}

// Primitive: x has order exactly 2^d - 1 modulo p.
bool primitive(Polynomial p) {
  const int d = degree(p);
  const std::uint64_t order = (std::uint64_t{1} << d) - 1;
  if (power_of_x(order, p) != 1) return false;
  std::uint64_t rest = order;
  for (std::uint64_t factor = 2; factor * factor <= rest; ++factor) {
    if (rest % factor != 0) continue;
    if (power_of_x(order / factor, p) == 1) return false;
    while (rest % factor == 0) rest /= factor;
  }
  return rest == 1 || rest == order || power_of_x(order / rest, p) != 1;
}

// Primitive polynomials in order of degree (x + 1 first), as many as asked for.
std::vector<Polynomial> primitive_polynomials(std::size_t count) {
  std::vector<Polynomial> found;
  for (Polynomial p = 3; found.size() < count; p += 2) {  // constant term 1
    if (primitive(p)) found.push_back(p);
    if (degree(p) > 20) throw Error("too many Sobol dimensions");
  }
  return found;
}

}  // namespace

std::vector<std::vector<double>> latin_hypercube(std::size_t n, std::size_t dimensions,
                                                 std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(0.0, 1.0);
  std::vector<std::vector<double>> points(n, std::vector<double>(dimensions));
  std::vector<std::size_t> strata(n);
  for (std::size_t d = 0; d < dimensions; ++d) {
    std::iota(strata.begin(), strata.end(), 0);
    std::shuffle(strata.begin(), strata.end(), rng);
    for (std::size_t i = 0; i < n; ++i) {
      points[i][d] = (static_cast<double>(strata[i]) + jitter(rng)) / static_cast<double>(n);
    }
  }
  return points;
}

std::vector<std::vector<double>> scrambled_sobol(std::size_t n, std::size_t dimensions,
                                                 std::uint64_t seed) {
  constexpr int kBits = 32;
  std::mt19937_64 rng(seed);
  std::vector<std::vector<std::uint32_t>> directions(dimensions, std::vector<std::uint32_t>(kBits));
  if (dimensions == 0) return std::vector<std::vector<double>>(n);
  for (int k = 0; k < kBits; ++k) directions[0][k] = 1u << (kBits - 1 - k);  // van der Corput
  const std::vector<Polynomial> polynomials =
      dimensions > 1 ? primitive_polynomials(dimensions - 1) : std::vector<Polynomial>{};
  for (std::size_t d = 1; d < dimensions; ++d) {
    const Polynomial p = polynomials[d - 1];
    const int s = degree(p);
    std::vector<std::uint32_t> m(kBits);
    for (int k = 0; k < s && k < kBits; ++k) {  // initial direction numbers: odd, below 2^(k+1)
      m[k] = static_cast<std::uint32_t>((rng() % (1u << k)) * 2 + 1);
    }
    for (int k = s; k < kBits; ++k) {
      std::uint32_t value = m[k - s] ^ (m[k - s] << s);
      for (int j = 1; j < s; ++j) {
        if ((p >> (s - j)) & 1u) value ^= m[k - j] << j;
      }
      m[k] = value;
    }
    for (int k = 0; k < kBits; ++k) directions[d][k] = m[k] << (kBits - 1 - k);
  }
  std::vector<std::uint32_t> shift(dimensions);
  for (auto& s : shift) s = static_cast<std::uint32_t>(rng());
  std::vector<std::vector<double>> points(n, std::vector<double>(dimensions));
  std::vector<std::uint32_t> state(dimensions, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t d = 0; d < dimensions; ++d) {
      points[i][d] = static_cast<double>(state[d] ^ shift[d]) / 4294967296.0;
    }
    // Gray code order: flip the direction of the lowest zero bit of i.
    const int bit = __builtin_ctzll(~static_cast<unsigned long long>(i));
    if (bit >= kBits) break;
    for (std::size_t d = 0; d < dimensions; ++d) state[d] ^= directions[d][bit];
  }
  return points;
}

}  // namespace r3::bo
