// A result's winner as compiled code, beside its best.yaml: `best.code` (text, format
// "r3-winner-code 1": the candidate, the GPU architecture, the toolkit, the kernel's name in the
// image and the image's file with its hash) and the image itself (`best.cubin`). The results
// directory writes them from the run database's /codes; `r3 apply` loads that image into a CUDA
// application as it was confirmed, without compiling it again.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include "r3/run_database.hpp"

namespace r3 {

inline constexpr std::string_view kWinnerCodeFile = "best.code";
inline constexpr std::string_view kWinnerImageFile = "best.cubin";

// Writes both files into `directory`. Throws IoError naming the file.
void write_winner_code(const std::filesystem::path& directory, const run::CodeRecord& code);
// Removes them (a result whose winner has no stored code, or keeps the application's code).
void remove_winner_code(const std::filesystem::path& directory);
// The code stored in `directory`; nullopt when it has no best.code. Throws FormatError naming
// the file for one that is not in the format, names no image, or whose image does not match its
// hash; IoError when a file cannot be read.
std::optional<run::CodeRecord> read_winner_code(const std::filesystem::path& directory);

}  // namespace r3
