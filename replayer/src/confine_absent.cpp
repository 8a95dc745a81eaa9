// Builds without libseccomp: candidates run unconfined (the sandbox still isolates crashes and
// hangs), and the evaluator says so once.
#include "r3/replay/sandbox.hpp"

namespace r3::replay {

std::string confine_process() {
  return "this build of r3 has no libseccomp (install libseccomp-dev and reconfigure)";
}

}  // namespace r3::replay
