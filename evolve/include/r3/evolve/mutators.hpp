// Built-in source mutators, for runs without an LLM endpoint: real, semantics-preserving
// source-to-source rewrites of a kernel, done on Clang's AST, each exposing its factor as an
// R3_TUNABLE so that the parameter level of the search tunes it:
//   restrict       __restrict__ on the kernel's pointers   (R3_USE_RESTRICT 0/1)
//   unroll         #pragma unroll on one loop                (R3_UNROLL_<n>)
//   launch_bounds  __launch_bounds__ on a CUDA kernel        (R3_MAX_THREADS, R3_MIN_BLOCKS)
//   ldg            const pointer reads through __ldg         (R3_USE_LDG 0/1)
//   hoist_loads    a loop-invariant load before its loop     (R3_HOIST_<n> 0/1)
//   parametrise    the kernel's compile-time sizes: each `#define NAME <power of two>` it
//                  expands in a __shared__ array's size or that equals a dimension of the
//                  recorded block becomes R3_TUNABLE(NAME, ...); a power of two written as a
//                  number in a __shared__ array's size becomes R3_TILE_<n> wherever the kernel
//                  writes that number; a template kernel's integer parameter (at the value
//                  of the recorded instance, MutationContext::template_arguments) becomes
//                  R3_<PARAM>_<n> wherever the kernel uses it (the recorded instance is still
//                  the one compiled); `#pragma unroll N` becomes R3_UNROLL_<n>; a for
//                  loop's step written as a number equal to a recorded block dimension
//                  (`j += 128`) becomes R3_STRIDE_<n>, or the name of the size the block
//                  already follows. Where a size
//                  equals the block, the launch is coupled to it (R3_LAUNCH_BLOCK,
//                  r3/evolve/launch_block.hpp), with the grid derived or kept (two variants)
// Every mutation returned compiles (with Clang, defaults of its tunables); the sources are
// self-contained (they define R3_TUNABLE and the defaults if the build does not).
// Lives in libr3llvm; mutators_available() is false in builds without LLVM.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "r3/evolve/response.hpp"

namespace r3::evolve {

enum class SourceLanguage { cpp, cuda };

// What the mutators know of the kernel beyond its source.
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

// All single rewrites the named mutators can make to kernel `entry` of `source`.
MutationReport mutate(std::string_view source, std::string_view file_name, std::string_view entry,
                      SourceLanguage language, const std::vector<std::string>& mutators,
                      const MutationContext& context = {});

// Whether `source` compiles (parses and type-checks) as `language`; diagnostics appended.
bool compiles(std::string_view source, std::string_view file_name, SourceLanguage language,
              std::string& diagnostics);

bool mutators_available();

}  // namespace r3::evolve
