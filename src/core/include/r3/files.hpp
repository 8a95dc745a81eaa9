// Reading the files users name (tune.yaml, sources, templates, captures): only regular files, and
// no more bytes than such a file can sensibly hold. A FIFO would block the reader for good, a
// device such as /dev/zero never ends, a directory is not a file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace r3 {

inline constexpr std::uint64_t kMaxTextFileBytes = 64ull << 20;  // far above any source or config

// Why `path` cannot be read as a regular file ("does not exist", "is a directory, not a file",
// "is a FIFO, not a regular file", "cannot be read: Permission denied"); nullopt when it can.
std::optional<std::string> not_a_readable_file(const std::filesystem::path& path);

// The whole of a regular file, read without blocking on FIFOs. Throws IoError naming the file,
// saying what it was to be (`what`: "tune file", "source") and why it is refused: not one of
// not_a_readable_file's reasons, or larger than `max_bytes`.
std::string read_text_file(const std::filesystem::path& path, std::string_view what,
                           std::uint64_t max_bytes = kMaxTextFileBytes);

// Writes `bytes` to `path`, replacing what it held. Throws IoError naming the file and why.
void write_file(const std::filesystem::path& path, std::string_view bytes);

}  // namespace r3
