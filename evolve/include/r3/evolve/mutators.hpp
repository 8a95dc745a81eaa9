// Built-in source mutators, for runs without an LLM endpoint: real, semantics-preserving
// source-to-source rewrites of a kernel, done on Clang's AST, each exposing its factor as an
// R3_TUNABLE so that the parameter level of the search tunes it:
//   restrict       __restrict__ on the kernel's pointers   (R3_USE_RESTRICT 0/1)
//   unroll         #pragma unroll on one loop                (R3_UNROLL_<n>)
//   launch_bounds  __launch_bounds__ on a CUDA kernel        (R3_MAX_THREADS, R3_MIN_BLOCKS)
//   ldg            const pointer reads through __ldg         (R3_USE_LDG 0/1)
//   hoist_loads    a loop-invariant load before its loop     (R3_HOIST_<n> 0/1)
// Every mutation returned compiles (with Clang, defaults of its tunables); the sources are
// self-contained (they define R3_TUNABLE and the defaults if the build does not).
// Lives in libr3llvm; mutators_available() is false in builds without LLVM.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "r3/evolve/response.hpp"

namespace r3::evolve {

enum class SourceLanguage { cpp, cuda };

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
                      SourceLanguage language, const std::vector<std::string>& mutators);

// Whether `source` compiles (parses and type-checks) as `language`; diagnostics appended.
bool compiles(std::string_view source, std::string_view file_name, SourceLanguage language,
              std::string& diagnostics);

bool mutators_available();

}  // namespace r3::evolve
