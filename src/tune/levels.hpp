// The levels of the search below the source (DESIGN.md §6): compiler (optimisation level, flags,
// an LLVM pass sequence), launch (block shape) and parameters (the source's R3_TUNABLEs). Each is
// a bo::Space per source; a candidate takes one configuration per level and becomes a Variant.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "r3/bo/space.hpp"
#include "r3/config/tune_config.hpp"
#include "r3/evolve/response.hpp"
#include "r3/replay/backend.hpp"
#include "r3/run_database.hpp"

namespace r3::tune {

enum class Level { compiler, launch, parameters };
inline constexpr std::array kLevels = {Level::compiler, Level::launch, Level::parameters};
std::string_view to_string(Level level);
std::optional<Level> parse_level(std::string_view text);
// The run database's name for a candidate of that level.
run::CandidateLevel candidate_level_of(Level level);

// How a candidate's code is made. Each path has its own compiler options: the compiler level
// proposes only options that change the code on the path in use.
enum class CodePath {
  host,      // the host backend: Clang, an LLVM pass pipeline, ORC JIT
  recorded,  // CUDA: the recorded cubin as it is, or the recorded PTX through the driver's JIT
  nvrtc,     // CUDA: the source through NVRTC (and ptxas)
};
std::string_view to_string(CodePath path);

// What a level searches for one source; absent when it has nothing to search.
struct LevelSpace {
  bo::Space space;
  bo::Configuration defaults;  // the configuration that changes nothing
};

// A compiler switch of the search as one compiler sees it: the parameter's values, first the
// compiler's default, and the flag the other value produces. Named and valued after the flag
// (NVRTC's "prec_div" takes "true"/"false" and "false" gives --prec-div=false), so that
// descriptions say what the code was built with.
struct Switch {
  std::string name;
  std::string default_label, other_label;
  std::string flag;  // what the other value adds to the compile
};

// Builds the level spaces of a source. Pass pool entries this LLVM cannot run are left out
// (with a warning, once per process).
// "default<O3>" -> 3; nullopt for any other pipeline (the compiler level's baseline must be one).
std::optional<int> opt_level_of(std::string_view pipeline);

// The values each block dimension takes at the launch level.
struct BlockChoices {
  std::vector<std::uint32_t> x, y, z;
};

// What Kokkos' team-size tuner can give a TeamPolicy kernel recorded with `block` (vector length,
// team size, 1): a vector length that is a power of two up to 32 where the application left it
// to Kokkos (AUTO), a power-of-two team size where it left that; otherwise the recorded value.
BlockChoices kokkos_team_choices(const capture::Dim3& block, bool auto_team_size,
                                 bool auto_vector_length);

class LevelBuilder {
 public:
  LevelBuilder(const config::TuneConfig& config, config::Backend backend);
  // `original_block`: the launch level's default point (added to the block lists when missing);
  // without one the smallest block of the lists. `path`: how the source's code is made (the
  // compiler level's options); `has_ptx`: whether the capture holds PTX to JIT (recorded path);
  // `blocks`: the launch level's values, search.launch's lists when not given.
  std::optional<LevelSpace> build(Level level, const std::vector<evolve::Tunable>& tunables,
                                  std::optional<capture::Dim3> original_block = {},
                                  CodePath path = CodePath::host, bool has_ptx = true,
                                  const BlockChoices* blocks = nullptr) const;
  // Sets what `configuration` of `level` means on `variant`.
  void apply(Level level, const LevelSpace& space, const bo::Configuration& configuration,
             replay::Variant& variant) const;
  bool enabled(Level level) const;
  double share(Level level) const;
  // The recorded path's point that sends the recorded PTX through the JIT with every other
  // option at its default: the rebuilt original of a kernel without a source. nullopt when
  // `space` (the recorded path's compiler level) has no such point.
  std::optional<bo::Configuration> recorded_jit(const LevelSpace& space) const;

 private:
  std::optional<LevelSpace> build_compiler(CodePath path, bool has_ptx) const;
  // The switch a search flag stands for with this backend's compiler.
  std::optional<Switch> switch_of(std::string_view search_flag) const;
  // The optimisation level candidates are compared at: search.compiler.passes.baseline's.
  int baseline_opt() const;
  const config::TuneConfig& config_;
  config::Backend backend_;
  std::vector<std::string> passes_;  // pool entries as they are written in a pipeline
  std::vector<std::string> flags_;   // compiler.flags this backend knows how to pass
};

// nullopt when the compiler has no such switch.
std::optional<Switch> host_switch(std::string_view search_flag);
std::optional<Switch> nvrtc_switch(std::string_view search_flag);

}  // namespace r3::tune
