// A tuned unit carried back into the application's own files. When a kernel's source is the
// application's file, r3 tunes the kernel's device-only unit (r3 extract), whose pieces are
// copies of the file (and its headers) each after a '#line N "FILE"' marker; a candidate's
// edits to a piece become the same edits at line N of FILE.
#pragma once

#include <filesystem>
#include <map>
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
//
// What a candidate added before the first piece (the mutators' macros: R3_UNROLL_0, R3_RESTRICT)
// goes into the kernel's file just before the first changed piece there (else before the
// kernel), less r3's own declarations (R3_TUNABLE, R3_LAUNCH_BLOCK, R3_LAUNCH_GRID), which mean
// nothing to the application's build.
std::vector<FilePatch> patch_files_from_unit(const std::string& original_unit,
                                             const std::string& best_unit);

// The unified diff of `files` to apply with `patch -p1` in the directory that holds all of them
// (the source's directory, or above it where a header lies above: `patch` refuses names with
// ".."), named relative to it; its first line says where ("# r3: apply in DIR ..."), which
// `patch` skips. Empty when `files` is.
std::string application_patch(const std::vector<FilePatch>& files,
                              const std::filesystem::path& source_directory);

// `source` with the winner's values as the defaults of its tunables: each `#define NAME ...`
// line of a NAME in `values` defines it to its value, and each R3_TUNABLE(NAME, default, ...)
// names it as the default, and each `#pragma unroll NAME` unrolls by the value (nvcc does not
// expand macros there). The application, built as it is, then builds the winner.
std::string with_tunable_values(const std::string& source,
                                const std::map<std::string, std::string>& values);

}  // namespace r3::report
