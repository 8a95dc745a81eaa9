// The built-in source mutators, done on Clang's AST (which mutators there are and what each
// does: r3/evolve/mutators.hpp, the search's entry point to them). Every mutation returned
// compiles with Clang at its tunables' defaults. Part of libr3llvm, the one library that holds
// Clang.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "r3/mutation.hpp"

namespace r3::compiler {

// The rewrites of kernel `entry` of `source` that `mutators` make (names as in
// r3/evolve/mutators.hpp); `diagnostics` says why there are none when the source does not parse.
MutationReport mutate(std::string_view source, std::string_view file_name, std::string_view entry,
                      SourceLanguage language, const std::vector<std::string>& mutators,
                      const MutationContext& context = {});

// Whether `source` parses and type-checks, read with the context's defines, include
// directories and flags; the compiler's messages appended to `diagnostics`.
bool compiles(std::string_view source, std::string_view file_name, SourceLanguage language,
              std::string& diagnostics, const MutationContext& context = {});

}  // namespace r3::compiler
