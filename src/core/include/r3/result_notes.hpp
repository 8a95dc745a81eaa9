// The comment lines a result's best.yaml starts with, besides the tune.yaml it is: written by
// the results directory (r3::report), read by `r3 apply`, which must not apply a winner that was
// not faster than the application's code.
#pragma once

#include <string_view>

namespace r3 {

// "# keep the application's code: no candidate was faster than it, run for run"
inline constexpr std::string_view kKeepOriginalNote = "# keep the application's code";
// "# confirmed speedup 1.42x (1.40-1.44 over 10 neighbouring pairs), ..."
inline constexpr std::string_view kConfirmedSpeedupNote = "# confirmed speedup ";

}  // namespace r3
