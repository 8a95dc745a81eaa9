// Human-readable summaries of r3 files, as printed by `r3 inspect`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "r3/capture.hpp"

namespace r3 {

struct InspectOptions {
  bool list_regions = false;       // one line per region instead of per-table totals
  std::size_t launches_shown = 8;  // per kernel; the rest are summarised in one line
  bool show_args = false;          // each shown launch's parameter bytes, in hex
  // By kernel name: its parameters' names in its source, to show "C (arg2)" for region arg2.
  std::map<std::string, std::vector<std::string>> parameter_names;
};

void inspect_capture(const capture::CaptureReader& capture, const InspectOptions& options,
                     std::ostream& out);

// "0 B", "512 B", "1.5 KiB", "64.0 MiB", "2.00 GiB"
std::string format_bytes(std::uint64_t bytes);

}  // namespace r3
