// A tuned unit carried back into the application's own files. When a kernel's source is the
// application's file, r3 tunes the kernel's device-only unit (r3 extract), whose pieces are
// copies of the file (and its headers) each after a '#line N "FILE"' marker; a candidate's
// edits to a piece become the same edits at line N of FILE.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace r3::report {

struct FilePatch {
  std::filesystem::path file;
  std::string before;  // the file as it is
  std::string after;   // with the edited pieces in place
};

// One entry per file whose pieces changed; empty when `original_unit` is not an extracted unit,
// when the candidate changed or dropped the markers, or when a file no longer holds a piece as
// it was extracted (then the patch is made against the unit instead).
std::vector<FilePatch> patch_files_from_unit(const std::string& original_unit,
                                             const std::string& best_unit);

}  // namespace r3::report
