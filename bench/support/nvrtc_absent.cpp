// nvrtc_check.hpp in a build without the CUDA toolkit: nothing to compile with.
#include "nvrtc_check.hpp"

namespace r3::bench {

bool nvrtc_available() { return false; }

bool nvrtc_compiles(const std::string&, const std::string&, const std::vector<std::string>&,
                    std::string& log) {
  log += "this build has no CUDA toolkit, hence no NVRTC\n";
  return false;
}

}  // namespace r3::bench
