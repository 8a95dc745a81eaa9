// What replay lets its users choose, as plain values: the compiler a variant is built with and
// how its results are compared with the recorded ones. tune.yaml's `verify` section
// (r3/config/tune_config.hpp) and `r3 replay`'s options map onto these.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "r3/capture.hpp"
#include "r3/enum_names.hpp"

namespace r3::replay {

enum class Compiler { nvrtc, clang, recorded };
// Their one spelling (tune.yaml, the wire, r3 replay --compiler), in the order messages list them.
inline constexpr EnumNames<Compiler, 3> kCompilerNames = {
    {{Compiler::nvrtc, "nvrtc"}, {Compiler::clang, "clang"}, {Compiler::recorded, "recorded"}}};
// "nvrtc", "clang", "recorded".
std::string_view to_string(Compiler value);
// The inverse of to_string; nullopt for anything else.
std::optional<Compiler> parse_compiler(std::string_view text);

struct Tolerance {
  bool bitwise = true;  // when false: |x - ref| <= atol + rtol * |ref|
  double rtol = 0;
  double atol = 0;
  static Tolerance exact() { return Tolerance{}; }
  static Tolerance relative(double rtol, double atol) { return Tolerance{false, rtol, atol}; }
  friend bool operator==(const Tolerance&, const Tolerance&) = default;
};

struct VerifyOptions {
  std::map<capture::ElementType, Tolerance> types = default_type_tolerances();
  std::map<std::string, Tolerance> regions;  // by region name; wins over types
  bool after_timing = true;                  // verify again after the timed runs
  // Element types of regions the capture records as unknown, by region name: the tuning job
  // learns them from the kernel's source (a pointer to a struct of floats).
  std::map<std::string, capture::ElementType> region_types;

  Tolerance for_region(std::string_view name, capture::ElementType type) const;
  // The type a region is compared as: as recorded, else as region_types says.
  capture::ElementType type_of(std::string_view name, capture::ElementType recorded) const;
  static std::map<capture::ElementType, Tolerance> default_type_tolerances();
};

}  // namespace r3::replay
