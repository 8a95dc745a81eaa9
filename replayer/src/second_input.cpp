#include "second_input.hpp"

#include <cmath>
#include <cstring>
#include <random>

namespace r3::replay {
namespace {

template <class T>
void move_elements(std::vector<std::byte>& bytes, std::uint64_t seed) {
  const std::size_t count = bytes.size() / sizeof(T);
  double magnitude = 0;
  std::size_t finite = 0;
  for (std::size_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
    if (!std::isfinite(v)) continue;
    magnitude += std::fabs(double(v));
    ++finite;
  }
  const double mean = finite > 0 ? magnitude / double(finite) : 0;
  const double scale = (mean > 0 ? mean : 1.0) / 64;
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> step(-1.0, 1.0);
  for (std::size_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
    const double moved = step(random) * scale;
    if (!std::isfinite(v)) continue;
    v = static_cast<T>(double(v) + moved);
    std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
  }
}

}  // namespace

bool moved_on_second_input(capture::ElementType type) {
  return type == capture::ElementType::f32 || type == capture::ElementType::f64;
}

std::vector<std::byte> second_input(std::span<const std::byte> bytes, capture::ElementType type,
                                    std::uint64_t seed) {
  std::vector<std::byte> out(bytes.begin(), bytes.end());
  if (type == capture::ElementType::f32) move_elements<float>(out, seed);
  if (type == capture::ElementType::f64) move_elements<double>(out, seed);
  return out;
}

}  // namespace r3::replay
