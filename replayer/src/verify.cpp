#include "verify.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace r3::replay {
namespace {

using capture::ElementType;

float half_to_float(std::uint16_t h) {
  std::uint32_t sign = (h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1f;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

float bfloat_to_float(std::uint16_t b) {
  std::uint32_t bits = std::uint32_t{b} << 16;
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

template <class T>
T load(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

// The element at `p` as a double, for error sizes and tolerances.
double value_at(const std::byte* p, ElementType type) {
  switch (type) {
    case ElementType::u8: return load<std::uint8_t>(p);
    case ElementType::i8: return load<std::int8_t>(p);
    case ElementType::u16: return load<std::uint16_t>(p);
    case ElementType::i16: return load<std::int16_t>(p);
    case ElementType::u32: return load<std::uint32_t>(p);
    case ElementType::i32: return load<std::int32_t>(p);
    case ElementType::u64: return static_cast<double>(load<std::uint64_t>(p));
    case ElementType::i64: return static_cast<double>(load<std::int64_t>(p));
    case ElementType::f16: return half_to_float(load<std::uint16_t>(p));
    case ElementType::bf16: return bfloat_to_float(load<std::uint16_t>(p));
    case ElementType::f32: return load<float>(p);
    case ElementType::f64: return load<double>(p);
    case ElementType::unknown: return load<std::uint8_t>(p);
  }
  return 0;
}

}  // namespace

std::string describe(const config::Tolerance& tolerance) {
  if (tolerance.bitwise) return "bitwise";
  std::ostringstream out;
  out << "rtol=" << tolerance.rtol << " atol=" << tolerance.atol;
  return out.str();
}

RegionCheck compare_region(std::span<const std::byte> actual, std::span<const std::byte> expected,
                           ElementType type, const config::Tolerance& tolerance) {
  RegionCheck check;
  check.type = type;
  check.size = expected.size();
  check.tolerance = describe(tolerance);
  const std::size_t element = capture::element_size(type);
  check.elements = expected.size() / element + (expected.size() % element != 0 ? 1 : 0);
  if (actual.size() != expected.size()) {
    check.passed = false;
    check.mismatches = check.elements;
    check.first_bad_index = 0;
    check.max_error = std::numeric_limits<double>::infinity();
    return check;
  }
  if (std::memcmp(actual.data(), expected.data(), expected.size()) == 0) return check;

  const bool numeric = type != ElementType::unknown;
  const bool tolerant = !tolerance.bitwise && capture::is_floating_point(type);
  const std::size_t whole = expected.size() / element;
  for (std::size_t i = 0; i < whole; ++i) {
    const std::byte* a = actual.data() + i * element;
    const std::byte* e = expected.data() + i * element;
    if (std::memcmp(a, e, element) == 0) continue;
    double x = numeric ? value_at(a, type) : 0;
    double ref = numeric ? value_at(e, type) : 0;
    double error = 0;
    bool bad = true;
    if (std::isnan(x) || std::isnan(ref)) {
      bad = !(std::isnan(x) && std::isnan(ref));
      error = bad ? std::numeric_limits<double>::infinity() : 0;
    } else if (numeric) {
      error = std::fabs(x - ref);
      if (tolerant) bad = !(error <= tolerance.atol + tolerance.rtol * std::fabs(ref));
    }
    check.max_error = std::max(check.max_error, error);
    if (bad) {
      if (check.first_bad_index < 0) check.first_bad_index = static_cast<std::int64_t>(i);
      ++check.mismatches;
    }
  }
  // A trailing partial element (a region whose size is not a multiple of its element size).
  if (whole * element < expected.size() &&
      std::memcmp(actual.data() + whole * element, expected.data() + whole * element,
                  expected.size() - whole * element) != 0) {
    if (check.first_bad_index < 0) check.first_bad_index = static_cast<std::int64_t>(whole);
    ++check.mismatches;
  }
  check.passed = check.mismatches == 0;
  return check;
}

}  // namespace r3::replay
