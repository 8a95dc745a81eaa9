// Regions of CUDA captures are named after what reaches them ("arg2", "arg0+16", "*(arg4+8)");
// where the kernel's source is known, the job shows them as the source names its parameters.
#pragma once

#include <string>
#include <vector>

namespace r3::tune {

// A message with each "region 'arg2'" shown as "region 'C' (arg2)" (capture::source_region_name).
std::string with_source_names(const std::vector<std::string>& names, const std::string& message);

}  // namespace r3::tune
