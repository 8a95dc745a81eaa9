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
//                  r3/evolve/launch_block.hpp), with the grid derived or kept (two variants).
//                  No size of 32 in a kernel with warp-level code (shuffles, votes, warp
//                  reductions, __syncwarp, warpSize): there it is the warp's size
// Every mutation returned compiles (with Clang, defaults of its tunables, and the build's
// defines, include directories and reading flags of MutationContext); the sources are
// self-contained (they define R3_TUNABLE and the defaults if the build does not).
// The mutators themselves are Clang code in libr3llvm (r3/compiler/mutators.hpp); these are
// evolve's entry points to them, and say why not in builds without LLVM
// (mutators_available() is false there).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "r3/evolve/response.hpp"
#include "r3/mutation.hpp"

namespace r3::evolve {

using r3::Mutation;
using r3::MutationContext;
using r3::MutationReport;
using r3::Rejection;
using r3::SourceLanguage;

MutationReport mutate(std::string_view source, std::string_view file_name, std::string_view entry,
                      SourceLanguage language, const std::vector<std::string>& mutators,
                      const MutationContext& context = {});

// Whether `source` parses and type-checks with Clang, read with the context's defines, include
// directories and flags (MutationContext).
bool compiles(std::string_view source, std::string_view file_name, SourceLanguage language,
              std::string& diagnostics, const MutationContext& context = {});

bool mutators_available();

}  // namespace r3::evolve
