#include "r3/evolve/prompt.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "builtin_prompts.hpp"
#include "r3/error.hpp"

namespace r3::evolve {
namespace {

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read the prompt template", in_file(path.string()));
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::string milliseconds(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g ms", ms);
  return text;
}

}  // namespace

const std::string& PromptBuilder::builtin(const std::string& name) {
  static const std::string system(kBuiltinSystemPrompt), user(kBuiltinUserPrompt);
  if (name == "system.txt") return system;
  if (name == "user.txt") return user;
  throw Error("no built-in prompt template '" + name + "'");
}

PromptBuilder::PromptBuilder(const std::filesystem::path& directory)
    : system_(builtin("system.txt")), user_(builtin("user.txt")) {
  if (directory.empty()) return;
  std::error_code ec;
  if (!std::filesystem::is_directory(directory, ec)) {
    throw Error("the prompt template directory does not exist (llm.templates)",
                in_file(directory.string()));
  }
  if (std::filesystem::exists(directory / "system.txt")) system_ = read(directory / "system.txt");
  if (std::filesystem::exists(directory / "user.txt")) user_ = read(directory / "user.txt");
}

std::string fill_template(const std::string& text,
                          const std::vector<std::pair<std::string, std::string>>& values) {
  std::string out;
  std::size_t at = 0;
  while (true) {
    std::size_t open = text.find("{{", at);
    if (open == std::string::npos) break;
    std::size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) break;
    const std::string name = text.substr(open + 2, close - open - 2);
    out += text.substr(at, open - at);
    auto it =
        std::find_if(values.begin(), values.end(), [&](const auto& v) { return v.first == name; });
    out += it != values.end() ? it->second : text.substr(open, close + 2 - open);
    at = close + 2;
  }
  return out + text.substr(at);
}

std::vector<ChatMessage> PromptBuilder::build(const PromptContext& c) const {
  std::string best;
  for (const auto& attempt : c.best)
    best += "- " + milliseconds(attempt.time_ms) + ": " + attempt.summary + "\n";
  if (best.empty()) best = "- none yet\n";
  std::string failures;
  for (const std::string& f : c.failures) failures += "- " + f + "\n";
  if (failures.empty()) failures = "- none\n";
  const std::vector<std::pair<std::string, std::string>> values = {
      {"entry", c.entry},
      {"signature", c.signature},
      {"language", c.language},
      {"compiler", c.compiler},
      {"device", c.device},
      {"source", c.source},
      {"fence", c.language == "CUDA" ? "cuda" : "cpp"},
      {"launch", c.launch.empty() ? "" : "Launch: " + c.launch},
      {"resources", c.resources.empty() ? "" : "Resources: " + c.resources},
      {"current_time", c.current_time_ms > 0 ? milliseconds(c.current_time_ms) : "not timed yet"},
      {"best", best},
      {"failures", failures}};
  return {{"system", fill_template(system_, values)}, {"user", fill_template(user_, values)}};
}

}  // namespace r3::evolve
