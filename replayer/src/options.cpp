#include "r3/replay/options.hpp"

namespace r3::replay {

std::string_view to_string(Compiler value) { return name_of(kCompilerNames, value); }

std::optional<Compiler> parse_compiler(std::string_view text) {
  return value_named(kCompilerNames, text);
}

std::map<capture::ElementType, Tolerance> VerifyOptions::default_type_tolerances() {
  using capture::ElementType;
  std::map<ElementType, Tolerance> types;
  for (ElementType type : capture::kAllElementTypes) types[type] = Tolerance::exact();
  types[ElementType::f16] = Tolerance::relative(1e-3, 1e-5);
  types[ElementType::bf16] = Tolerance::relative(1e-2, 1e-4);
  types[ElementType::f32] = Tolerance::relative(1e-5, 1e-8);
  types[ElementType::f64] = Tolerance::relative(1e-12, 1e-15);
  return types;
}

Tolerance VerifyOptions::for_region(std::string_view name, capture::ElementType type) const {
  if (auto it = regions.find(std::string(name)); it != regions.end()) return it->second;
  if (auto it = types.find(type); it != types.end()) return it->second;
  return Tolerance::exact();
}

capture::ElementType VerifyOptions::type_of(std::string_view name,
                                            capture::ElementType recorded) const {
  if (recorded != capture::ElementType::unknown) return recorded;
  auto it = region_types.find(std::string(name));
  return it == region_types.end() ? recorded : it->second;
}

}  // namespace r3::replay
