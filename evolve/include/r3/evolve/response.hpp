// Turning an LLM's answer into a candidate source: code from a fenced block, or SEARCH/REPLACE
// edits applied to the parent; refused with a reason when there is no code, an edit does not
// apply, the kernel's signature changed, or nothing changed. R3_TUNABLE declarations in a source
// become parameters of the search.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "r3/mutation.hpp"

namespace r3::evolve {

struct Edit {
  std::string search;
  std::string replace;
};

struct ParsedResponse {
  std::vector<Edit> edits;  // when the answer holds SEARCH/REPLACE blocks
  std::string code;         // else: the fenced block that defines the entry (or the largest)
};
ParsedResponse parse_response(std::string_view text, std::string_view entry);

struct EditResult {
  bool ok = false;
  std::string source;
  std::string reason;  // which edit did not apply
};
// Each edit replaces its first exact match, or else the first match that differs only in
// whitespace (indentation, line breaks).
EditResult apply_edits(std::string_view source, const std::vector<Edit>& edits);

struct Candidate {
  bool ok = false;
  std::string source;
  std::string reason;  // why the answer gives no candidate
};
// Why `candidate` may not be compiled for what it includes, or "": every #include (and
// #include_next, #import, #embed) it adds to its parent's must be a plain "name" or <name>
// without an absolute path or '..', so that the compile reads nothing outside the kernel's
// include path (docs/security.md).
std::string include_problem(std::string_view parent, std::string_view candidate);

// The candidate an answer describes, checked against its parent.
Candidate candidate_from_response(std::string_view parent, std::string_view response,
                                  std::string_view entry);

// The declaration of `entry` in `source` from its return type to the parameter list's ')',
// whitespace collapsed; "" when the source does not define it.
std::string entry_signature(std::string_view source, std::string_view entry);
// The parameter names of a signature (entry_signature's), in order; "" for an unnamed one.
std::vector<std::string> parameter_names(std::string_view signature);
// Whether two signatures declare the same parameter types (names, restrict qualifiers and
// __launch_bounds__ may differ).
bool same_signature(std::string_view a, std::string_view b);

using r3::Tunable;  // r3/mutation.hpp
// R3_TUNABLE(NAME, default, v1 v2 v3) or R3_TUNABLE(NAME, default, v1, v2, v3).
std::vector<Tunable> parse_tunables(std::string_view source);
// What removes the R3_TUNABLE declarations at compile time: the macro defined empty
// (-D'R3_TUNABLE(...)=', as a defines entry name -> "").
inline constexpr const char* kTunableMacro = "R3_TUNABLE(...)";

}  // namespace r3::evolve
