// Regions of CUDA captures are named after what reaches them ("arg2", "arg0+16", "*(arg4+8)");
// where the kernel's source is known, the job shows them as the source names its parameters.
#pragma once

#include <string>
#include <vector>

namespace r3::tune {

// "arg2" -> "C", "arg0+16" -> "f+16", "*(arg4+8)" -> "*(table+8)", with `names` the kernel's
// parameters in order ("" for an unnamed one); other names as they are.
std::string source_name(const std::vector<std::string>& names, const std::string& region);

// A message with each "region 'arg2'" shown as "region 'C' (arg2)".
std::string with_source_names(const std::vector<std::string>& names, const std::string& message);

}  // namespace r3::tune
