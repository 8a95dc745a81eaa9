// Whether a CUDA source compiles with NVRTC (the CUDA toolkit's runtime compiler, which needs no
// GPU): the check the mutator tests and bench/mutator_yield apply to CUDA rewrites. In builds
// without the CUDA toolkit there is nothing to check with, and nvrtc_available() says so.
#pragma once

#include <string>
#include <vector>

namespace r3::bench {

bool nvrtc_available();
// Compiles `source` to PTX for compute_90 with `options` ("-DNAME=value", ...). Returns whether it
// compiled; the compiler log is appended to `log`.
bool nvrtc_compiles(const std::string& source, const std::string& name,
                    const std::vector<std::string>& options, std::string& log);

}  // namespace r3::bench
