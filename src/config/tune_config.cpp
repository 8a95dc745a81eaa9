#include "r3/config/tune_config.hpp"

#include "r3/error.hpp"
#include "r3/files.hpp"
#include "schema.hpp"

namespace r3::config {

namespace fs = std::filesystem;

void TuneConfig::fail(std::string_view key, std::string message) const {
  ErrorContext context;
  context.file = file.string();
  context.key = std::string(key);
  // Point at the key, or else at the nearest enclosing key that was written.
  std::string probe(key);
  while (!probe.empty()) {
    if (auto it = locations.find(probe); it != locations.end()) {
      context.line = it->second.line;
      context.column = it->second.column;
      break;
    }
    std::size_t cut = probe.find_last_of(".[");
    probe.resize(cut == std::string::npos ? 0 : cut);
  }
  throw ConfigError(std::move(message), context);
}

TuneConfig parse_tune_config(std::string_view text, const fs::path& file) {
  TuneConfig config;
  config.file = fs::absolute(file).lexically_normal();
  config.text = std::string(text);
  YAML::Node root;
  try {
    std::vector<YAML::Node> documents = YAML::LoadAll(config.text);
    if (documents.size() > 1) {
      ErrorContext context = in_file(config.file.string());
      context.line = documents[1].Mark().is_null() ? 0 : documents[1].Mark().line + 1;
      throw ConfigError("holds " + std::to_string(documents.size()) +
                            " YAML documents (separated by '---'); a tune file is one document",
                        context);
    }
    if (!documents.empty()) root = documents.front();
  } catch (const YAML::Exception& e) {
    ErrorContext context = in_file(config.file.string());
    if (!e.mark.is_null()) {
      context.line = e.mark.line + 1;
      context.column = e.mark.column + 1;
    }
    throw ConfigError("not valid YAML: " + e.msg, context);
  }
  read_document(root, config);
  return config;
}

// A tune.yaml is a few KiB; a larger file is a mistake (a capture named as the tune file?).
constexpr std::uint64_t kMaxTuneFileBytes = 1 << 20;

TuneConfig load_tune_config(const fs::path& file) {
  std::string text;
  try {
    text = read_text_file(file, "tune file", kMaxTuneFileBytes);
  } catch (const IoError& e) {
    throw ConfigError(e.message(), in_file(file.string()));
  }
  return parse_tune_config(text, file);
}

}  // namespace r3::config
