// The built-in mutators in a build without LLVM/Clang (R3_ENABLE_LLVM=OFF or not found): they
// need Clang's AST, so they report why they cannot run instead of rewriting anything.
#include "r3/evolve/mutators.hpp"

namespace r3::evolve {
namespace {
constexpr const char* kWhy =
    "the built-in mutators need Clang: this r3 was built without LLVM (R3_ENABLE_LLVM)\n";
}

bool mutators_available() { return false; }

bool compiles(std::string_view, std::string_view, SourceLanguage, std::string& diagnostics) {
  diagnostics += kWhy;
  return false;
}

MutationReport mutate(std::string_view, std::string_view, std::string_view, SourceLanguage,
                      const std::vector<std::string>&, const MutationContext&) {
  MutationReport report;
  report.diagnostics = kWhy;
  return report;
}

}  // namespace r3::evolve
