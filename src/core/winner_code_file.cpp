#include "r3/winner_code_file.hpp"

#include <map>
#include <sstream>

#include "r3/error.hpp"
#include "r3/files.hpp"
#include "r3/hash.hpp"

namespace r3 {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kFormat = "r3-winner-code";
constexpr int kVersion = 1;
// Far above any kernel's cubin (a few hundred KiB), far below what a damaged file could claim.
constexpr std::uint64_t kMaxImageBytes = 256ull << 20;

}  // namespace

void write_winner_code(const fs::path& directory, const run::CodeRecord& code) {
  write_file(directory / kWinnerImageFile, code.image);
  std::ostringstream text;
  text << kFormat << " " << kVersion << "\n"
       << "candidate " << code.candidate << "\n"
       << "kernel " << code.kernel << "\n"
       << "architecture " << code.architecture << "\n"
       << "toolkit " << code.toolkit << "\n"
       << "function " << code.function << "\n"
       << "image " << kWinnerImageFile << " " << hash_string(code.image).hex() << "\n";
  write_file(directory / kWinnerCodeFile, text.str());
}

void remove_winner_code(const fs::path& directory) {
  std::error_code ignored;
  fs::remove(directory / kWinnerCodeFile, ignored);
  fs::remove(directory / kWinnerImageFile, ignored);
}

std::optional<run::CodeRecord> read_winner_code(const fs::path& directory) {
  const fs::path file = directory / kWinnerCodeFile;
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  const ErrorContext context = in_file(file.string());
  std::istringstream in(read_text_file(file, "winner code"));
  std::string format;
  int version = 0;
  if (!(in >> format >> version) || format != kFormat)
    throw FormatError("not an r3 winner code file (one starts with '" + std::string(kFormat) + " " +
                          std::to_string(kVersion) + "')",
                      context);
  if (version > kVersion)
    throw FormatError("winner code version " + std::to_string(version) +
                          " is newer than this r3 reads (" + std::to_string(kVersion) + ")",
                      context);
  std::map<std::string, std::string> fields;
  for (std::string key, value; in >> key && std::getline(in >> std::ws, value);)
    fields[key] = value;
  auto field = [&](const std::string& key) {
    auto it = fields.find(key);
    if (it == fields.end() || it->second.empty())
      throw FormatError("no '" + key + "' line", context);
    return it->second;
  };
  run::CodeRecord code;
  try {
    code.candidate = std::stoull(field("candidate"));
    code.kernel = static_cast<std::uint32_t>(std::stoul(field("kernel")));
  } catch (const std::logic_error&) {
    throw FormatError("'candidate' and 'kernel' must be numbers", context);
  }
  code.architecture = field("architecture");
  code.toolkit = field("toolkit");
  code.function = field("function");
  std::istringstream image_line(field("image"));
  std::string image_name, hex;
  image_line >> image_name >> hex;
  const auto hash = Hash128::from_hex(hex);
  // The image is a file beside this one, never a path elsewhere.
  if (image_name.empty() || fs::path(image_name).filename() != image_name || !hash)
    throw FormatError("'image' must name a file beside it and its xxh3-128 hash", context);
  code.image = read_text_file(directory / image_name, "winner image", kMaxImageBytes);
  if (hash_string(code.image) != *hash)
    throw FormatError((directory / image_name).string() +
                          " does not match the hash best.code gives for it (damaged, or from "
                          "another result)",
                      context);
  return code;
}

}  // namespace r3
