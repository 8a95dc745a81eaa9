#include "second_input.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "r3/log.hpp"
#include "verify.hpp"

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

std::string second_input_memory_short(std::uint64_t bytes) {
  const std::uint64_t available = available_host_memory();
  if (bytes <= available / 2) return "";
  return "host memory is short: it would take " + std::to_string(bytes >> 20) + " MiB of the " +
         std::to_string(available >> 20) + " MiB available";
}

MovedContents moved_contents(std::size_t launch, const std::vector<RegionBefore>& regions) {
  MovedContents moved;
  moved.regions.resize(regions.size());
  bool any = false;
  for (std::size_t r = 0; r < regions.size(); ++r) {
    moved.bytes += regions[r].size;
    if (!regions[r].before || !moved_on_second_input(regions[r].type)) continue;
    const std::uint64_t seed = 0x5ec07d1b9u ^ (launch * 1000003u + r);
    moved.regions[r] = std::make_shared<const std::vector<std::byte>>(
        second_input(*regions[r].before, regions[r].type, seed));
    moved.bytes += moved.regions[r]->size();
    any = true;
  }
  if (!any) moved = {};
  return moved;
}

void warn_no_second_input(const std::string& kernel, const std::string& why) {
  log::warning("kernel '", kernel, "': no second input to verify candidates on (", why,
               "); they are verified on the recording alone");
}

namespace {

// The mean magnitude of the finite elements of a f32 or f64 region; 0 for other types.
double mean_magnitude(std::span<const std::byte> bytes, capture::ElementType type) {
  auto mean = [&](auto zero) {
    using T = decltype(zero);
    double sum = 0;
    std::size_t finite = 0;
    for (std::size_t at = 0; at + sizeof(T) <= bytes.size(); at += sizeof(T)) {
      T v;
      std::memcpy(&v, bytes.data() + at, sizeof(T));
      if (!std::isfinite(v)) continue;
      sum += std::fabs(double(v));
      ++finite;
    }
    return finite > 0 ? sum / double(finite) : 0.0;
  };
  if (type == capture::ElementType::f32) return mean(0.0f);
  if (type == capture::ElementType::f64) return mean(0.0);
  return 0;
}

}  // namespace

SecondInputReference second_input_reference(std::span<const std::byte> expected,
                                            std::span<const std::byte> before,
                                            capture::ElementType type) {
  SecondInputReference reference;
  reference.changes = before.size() != expected.size() ||
                      std::memcmp(before.data(), expected.data(), expected.size()) != 0;
  reference.type = type;
  reference.mean_magnitude = mean_magnitude(expected, type);
  return reference;
}

SecondInputRule second_input_rule(const SecondInputReference& reference,
                                  std::span<const std::byte> expected,
                                  const capture::Region& recorded, const RunOptions& options) {
  SecondInputRule rule;
  rule.type = options.verify.type_of(recorded.name, recorded.element_type);
  if (!reference.changes) {
    rule.tolerance = replay::Tolerance::exact();
    return rule;
  }
  // This input judges whether the candidate does the application's work, not how precisely:
  // moved data brings out rounding differences the recorded data may hide (fast math on a sum
  // of differences), so the tolerance is loosened to 1e-3, relative and of the region's mean
  // magnitude. Skipped work still shows: elements the application's code changed and the
  // candidate left alone are counted bitwise.
  rule.tolerance = options.verify.for_region(recorded.name, rule.type);
  if (!rule.tolerance.bitwise) {
    const double magnitude = rule.type == reference.type ? reference.mean_magnitude
                                                         : mean_magnitude(expected, rule.type);
    rule.tolerance.rtol = std::max(rule.tolerance.rtol, kSecondInputLooseness);
    rule.tolerance.atol = std::max(rule.tolerance.atol, kSecondInputLooseness * magnitude);
  }
  return rule;
}

void label_second_input_check(RegionCheck& check, const capture::Region& recorded,
                              const SecondInputReference& reference) {
  check.name = recorded.name;
  check.address = recorded.address;
  check.expected_to_change = reference.changes;
}

RegionCheck check_on_second_input(std::span<const std::byte> actual,
                                  std::span<const std::byte> expected,
                                  std::span<const std::byte> before,
                                  const capture::Region& recorded, const RunOptions& options) {
  const capture::ElementType type = options.verify.type_of(recorded.name, recorded.element_type);
  const SecondInputReference reference = second_input_reference(expected, before, type);
  const SecondInputRule rule = second_input_rule(reference, expected, recorded, options);
  RegionCheck check = compare_region(actual, expected, rule.type, rule.tolerance,
                                     reference.changes ? before : std::span<const std::byte>{});
  label_second_input_check(check, recorded, reference);
  return check;
}

std::string failed_on_second_input(std::size_t launch, std::string failure) {
  const std::string recorded = "the recorded result";
  if (auto at = failure.find(recorded); at != std::string::npos)
    failure.replace(at, recorded.size(), "what the application's code left there");
  return "launch " + std::to_string(launch) +
         ", on a second input (its floating-point inputs moved a little, the application's code "
         "run on them): " + failure;
}

}  // namespace r3::replay
