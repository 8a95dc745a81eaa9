// What a source mutation is, shared by the two libraries that deal in them: the Clang mutators
// that make them (libr3llvm, r3/compiler/mutators.hpp) and the search that offers them as
// candidates beside the LLM's answers (libr3evolve, r3/evolve/mutators.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace r3 {

// A value a source leaves to the search: R3_TUNABLE(NAME, default, v1 v2 v3).
struct Tunable {
  std::string name;
  std::string default_value;
  std::vector<std::string> values;
  friend bool operator==(const Tunable&, const Tunable&) = default;
};

enum class SourceLanguage { cpp, cuda };

struct MutationContext {
  // The block the kernel was recorded with ({0, 0, 0}: unknown); sizes equal to one of its
  // dimensions are taken to fix the launch shape.
  std::array<std::uint32_t, 3> recorded_block{0, 0, 0};
  // What the source declares already (parse_tunables, parse_launch_block): not made again.
  std::vector<std::string> declared_tunables;
  bool launch_coupled = false;
  // The template arguments of the recorded instance of a template kernel, as the demangled
  // name writes them ("32", "float", "4u"): the defaults of its integer parameters.
  std::vector<std::string> template_arguments;
  // How the application's build reads the source, which the mutators parse and compile as it
  // does: the kernel's defines and include directories, and those of its flags that change how
  // a file reads (-std=, -D, -U, -I). Without them a source that includes a header from another
  // directory, or uses a macro the build defines, does not parse and gets no mutations.
  std::map<std::string, std::string> defines;
  std::vector<std::filesystem::path> include_dirs;
  std::vector<std::string> flags;
};

struct Mutation {
  std::string mutator;      // "unroll"
  std::string description;  // "#pragma unroll R3_UNROLL_1 on the loop at line 7"
  std::string source;
  std::vector<Tunable> tunables;  // the ones this mutation declares
};

struct Rejection {
  Mutation mutation;
  std::string error;  // the first error the compiler reported
};

struct MutationReport {
  std::vector<Mutation> mutations;
  // Rewrites that were made but did not compile (a bug of the mutator if it ever happens; they
  // are never offered as candidates).
  std::vector<Rejection> rejected;
  std::string diagnostics;  // when the source itself does not parse
};

// How a mutation couples the launch to a size of the kernel (read back by
// r3/evolve/launch_block.hpp): the macros defined away where the build does not define them,
// and the declaration that keeps the recorded grid.
inline constexpr const char* kLaunchBlockPreamble =
    "#ifndef R3_LAUNCH_BLOCK\n#define R3_LAUNCH_BLOCK(...)\n#endif\n"
    "#ifndef R3_LAUNCH_GRID\n#define R3_LAUNCH_GRID(...)\n#endif\n";
inline constexpr const char* kKeepGridDeclaration = "R3_LAUNCH_GRID(recorded)";

}  // namespace r3
