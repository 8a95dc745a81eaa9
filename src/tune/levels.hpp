// The levels of the search below the source (DESIGN.md §6): compiler (optimisation level, flags,
// an LLVM pass sequence), launch (block shape) and parameters (the source's R3_TUNABLEs). Each is
// a bo::Space per source; a candidate takes one configuration per level and becomes a Variant.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "r3/bo/space.hpp"
#include "r3/evolve/response.hpp"
#include "r3/replay/backend.hpp"
#include "r3/tune_config.hpp"

namespace r3::tune {

enum class Level { compiler, launch, parameters };
inline constexpr std::array kLevels = {Level::compiler, Level::launch, Level::parameters};
std::string_view to_string(Level level);
std::optional<Level> parse_level(std::string_view text);

// What a level searches for one source; absent when it has nothing to search.
struct LevelSpace {
  bo::Space space;
  bo::Configuration defaults;  // the configuration that changes nothing
};

// Builds the level spaces of a source. Pass pool entries this LLVM cannot run are left out
// (with a warning, once per process).
class LevelBuilder {
 public:
  LevelBuilder(const config::TuneConfig& config, config::Backend backend);
  // `original_block`: the launch level's default point (added to the block lists when missing);
  // without one the smallest block of the lists.
  std::optional<LevelSpace> build(Level level, const std::vector<evolve::Tunable>& tunables,
                                  std::optional<capture::Dim3> original_block = {}) const;
  // Sets what `configuration` of `level` means on `variant`.
  void apply(Level level, const LevelSpace& space, const bo::Configuration& configuration,
             replay::Variant& variant) const;
  bool enabled(Level level) const;
  double share(Level level) const;

 private:
  std::string flag(std::string_view search_flag) const;  // for this backend's compiler
  const config::TuneConfig& config_;
  config::Backend backend_;
  std::vector<std::string> passes_;  // pool entries as they are written in a pipeline
  std::vector<std::string> flags_;   // compiler.flags this backend knows how to pass
};

// The compiler flags a search flag stands for with the host backend's Clang and with NVRTC
// ("" when none).
std::string host_flag(std::string_view search_flag);
std::string cuda_flag(std::string_view search_flag);

}  // namespace r3::tune
