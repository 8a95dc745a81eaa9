// evolve's entry points to the built-in mutators: the Clang code of libr3llvm
// (r3/compiler/mutators.hpp), or, in a build without LLVM/Clang (R3_ENABLE_LLVM=OFF or not
// found), the reason they cannot run instead of any rewrite.
#include "r3/evolve/mutators.hpp"

#if R3_EVOLVE_HAVE_LLVM
#include "r3/compiler/mutators.hpp"
#endif

namespace r3::evolve {

#if R3_EVOLVE_HAVE_LLVM

bool mutators_available() { return true; }

bool compiles(std::string_view source, std::string_view file_name, SourceLanguage language,
              std::string& diagnostics, const MutationContext& context) {
  return compiler::compiles(source, file_name, language, diagnostics, context);
}

MutationReport mutate(std::string_view source, std::string_view file_name, std::string_view entry,
                      SourceLanguage language, const std::vector<std::string>& mutators,
                      const MutationContext& context) {
  return compiler::mutate(source, file_name, entry, language, mutators, context);
}

#else

namespace {
constexpr const char* kWhy =
    "the built-in mutators need Clang: this r3 was built without LLVM (R3_ENABLE_LLVM)\n";
}

bool mutators_available() { return false; }

bool compiles(std::string_view, std::string_view, SourceLanguage, std::string& diagnostics,
              const MutationContext&) {
  diagnostics += kWhy;
  return false;
}

MutationReport mutate(std::string_view, std::string_view, std::string_view, SourceLanguage,
                      const std::vector<std::string>&, const MutationContext&) {
  MutationReport report;
  report.diagnostics = kWhy;
  return report;
}

#endif

}  // namespace r3::evolve
