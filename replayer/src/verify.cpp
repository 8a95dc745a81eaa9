#include "verify.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <type_traits>

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

// Element types that need converting before they can be compared as numbers.
struct Half {
  std::uint16_t bits;
};
struct BFloat {
  std::uint16_t bits;
};
struct Byte {  // unknown type: compared bitwise, byte by byte, no error size
  std::uint8_t bits;
};

template <class T>
double as_number(T value) {
  if constexpr (std::is_same_v<T, Half>)
    return half_to_float(value.bits);
  else if constexpr (std::is_same_v<T, BFloat>)
    return bfloat_to_float(value.bits);
  else if constexpr (std::is_same_v<T, Byte>)
    return 0;
  else
    return static_cast<double>(value);
}

template <class T>
constexpr bool kFloating =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat>;

// One loop per element type, so that no element pays for a switch on its type.
template <class T>
void compare_elements(std::span<const std::byte> actual, std::span<const std::byte> expected,
                      std::size_t count, const replay::Tolerance& tolerance, RegionCheck& check) {
  const bool tolerant = kFloating<T> && !tolerance.bitwise;
  for (std::size_t i = 0; i < count; ++i) {
    T a, e;
    std::memcpy(&a, actual.data() + i * sizeof(T), sizeof(T));
    std::memcpy(&e, expected.data() + i * sizeof(T), sizeof(T));
    if (std::memcmp(&a, &e, sizeof(T)) == 0) continue;
    const double x = as_number(a), ref = as_number(e);
    double error = std::fabs(x - ref);
    bool bad = true;
    if (std::isnan(x) || std::isnan(ref)) {
      bad = !(std::isnan(x) && std::isnan(ref));
      error = bad ? std::numeric_limits<double>::infinity() : 0;
    } else if (tolerant) {
      bad = !(error <= tolerance.atol + tolerance.rtol * std::fabs(ref));
    }
    check.max_error = std::max(check.max_error, error);
    if (bad) {
      if (check.first_bad_index < 0) check.first_bad_index = static_cast<std::int64_t>(i);
      ++check.mismatches;
    }
  }
}

}  // namespace

std::string describe(const replay::Tolerance& tolerance) {
  if (tolerance.bitwise) return "bitwise";
  std::ostringstream out;
  out << "rtol=" << tolerance.rtol << " atol=" << tolerance.atol;
  return out.str();
}

RegionCheck compare_region(std::span<const std::byte> actual, std::span<const std::byte> expected,
                           ElementType type, const replay::Tolerance& tolerance,
                           std::span<const std::byte> before) {
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
  if (before.size() == expected.size()) {
    for (std::size_t at = 0; at + element <= expected.size(); at += element) {
      if (std::memcmp(expected.data() + at, before.data() + at, element) == 0) continue;
      ++check.changed;
      if (std::memcmp(actual.data() + at, before.data() + at, element) == 0) ++check.left_unchanged;
    }
  }

  const std::size_t whole = expected.size() / element;
  switch (type) {
    case ElementType::u8:
      compare_elements<std::uint8_t>(actual, expected, whole, tolerance, check);
      break;
    case ElementType::i8:
      compare_elements<std::int8_t>(actual, expected, whole, tolerance, check);
      break;
    case ElementType::u16:
      compare_elements<std::uint16_t>(actual, expected, whole, tolerance, check);
      break;
    case ElementType::i16:
      compare_elements<std::int16_t>(actual, expected, whole, tolerance, check);
      break;
    case ElementType::u32:
      compare_elements<std::uint32_t>(actual, expected, whole, tolerance, check);
      break;
    case ElementType::i32:
      compare_elements<std::int32_t>(actual, expected, whole, tolerance, check);
      break;
    case ElementType::u64:
      compare_elements<std::uint64_t>(actual, expected, whole, tolerance, check);
      break;
    case ElementType::i64:
      compare_elements<std::int64_t>(actual, expected, whole, tolerance, check);
      break;
    case ElementType::f16:
      compare_elements<Half>(actual, expected, whole, tolerance, check);
      break;
    case ElementType::bf16:
      compare_elements<BFloat>(actual, expected, whole, tolerance, check);
      break;
    case ElementType::f32:
      compare_elements<float>(actual, expected, whole, tolerance, check);
      break;
    case ElementType::f64:
      compare_elements<double>(actual, expected, whole, tolerance, check);
      break;
    case ElementType::unknown:
      compare_elements<Byte>(actual, expected, whole, tolerance, check);
      break;
  }
  // A trailing partial element (a region whose size is not a multiple of its element size).
  if (whole * element < expected.size() &&
      std::memcmp(actual.data() + whole * element, expected.data() + whole * element,
                  expected.size() - whole * element) != 0) {
    if (check.first_bad_index < 0) check.first_bad_index = static_cast<std::int64_t>(whole);
    ++check.mismatches;
  }
  check.passed = check.mismatches == 0 && !left_work_undone(check);
  return check;
}

}  // namespace r3::replay
