// Unified diffs of two texts, as `diff -u` writes them and `patch -p1` / `git apply` read them.
#pragma once

#include <string>
#include <string_view>

namespace r3::report {

// The unified diff turning `before` into `after` (3 lines of context), with headers
// "--- a/NAME" and "+++ b/NAME"; empty when the texts are equal.
std::string unified_diff(std::string_view before, std::string_view after, std::string_view name);

}  // namespace r3::report
