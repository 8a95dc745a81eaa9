// Builds without libseccomp: no system-call filters. Candidates still run in processes of their
// own with no descriptors, no privileges and resource limits; the evaluator says once what is
// missing.
#include <string>

#include "confine.hpp"
#include "r3/replay/sandbox.hpp"

namespace r3::replay {

namespace {
const char* const kNoSeccomp =
    "this build of r3 has no libseccomp (install libseccomp-dev and reconfigure)";
}

std::string confine_process() { return kNoSeccomp; }
std::string confine_candidate_calls() { return kNoSeccomp; }
std::string syscall_name(int number) { return "#" + std::to_string(number); }

}  // namespace r3::replay
