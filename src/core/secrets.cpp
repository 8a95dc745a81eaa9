#include "r3/secrets.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <regex>
#include <vector>

namespace r3 {
namespace {

std::mutex secrets_mutex;  // guards `secrets` (a leaf lock: nothing is called while held)
std::vector<std::string> secrets;

}  // namespace

bool names_a_secret(std::string_view variable_name) {
  std::string upper(variable_name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word : {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"})
    if (upper.find(word) != std::string::npos) return true;
  return false;
}

void remember_secret(std::string value) {
  if (value.size() < 8) return;
  std::lock_guard lock(secrets_mutex);
  if (std::find(secrets.begin(), secrets.end(), value) == secrets.end())
    secrets.push_back(std::move(value));
}

void remember_secrets_from_environment(char** environment) {
  for (char** variable = environment; variable && *variable; ++variable) {
    std::string_view text(*variable);
    std::size_t equals = text.find('=');
    if (equals != std::string_view::npos && names_a_secret(text.substr(0, equals)))
      remember_secret(std::string(text.substr(equals + 1)));
  }
}

std::string redact_secrets(std::string text) {
  std::lock_guard lock(secrets_mutex);
  for (const std::string& secret : secrets) {
    for (std::size_t at = 0; (at = text.find(secret, at)) != std::string::npos;)
      text.replace(at, secret.size(), "[secret]");
  }
  return text;
}

namespace {

// Calls `take` with each line of `text` (without its newline).
template <class Take>
void for_each_line(std::string_view text, Take take) {
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    take(std::string(text.substr(start, end - start)));
    start = end + 1;
  }
}

}  // namespace

std::vector<std::string> own_source_files(std::string_view source_name,
                                          std::string_view source_text) {
  std::vector<std::string> files{std::string(source_name)};
  static const std::regex line_directive(R"re(^[ \t]*#[ \t]*line[ \t]+\d+[ \t]+"([^"]+)")re");
  for_each_line(source_text, [&](const std::string& line) {
    std::smatch match;
    if (line.find("line") != std::string::npos && std::regex_search(line, match, line_directive) &&
        std::find(files.begin(), files.end(), match.str(1)) == files.end())
      files.push_back(match.str(1));
  });
  return files;
}

std::string quote_only_own_source(std::string_view diagnostics,
                                  const std::vector<std::string>& own_files) {
  // "file:12:3: error: text" (Clang), "file(12): error: text" (NVRTC).
  static const std::regex located(
      R"(^(.+?)(:\d+:\d+|\(\d+\)): (fatal error|catastrophic error|error|warning|note|remark)\b)");
  static const std::regex always_kept(R"(^(In file included from |\d+ errors? generated|r3))");
  auto own = [&](std::string_view file) {
    for (std::string_view name : own_files) {
      if (file == name) return true;
      if (file.size() > name.size() && file.ends_with(name) &&
          file[file.size() - name.size() - 1] == '/')
        return true;
    }
    return false;
  };
  std::string out;
  bool quoting = true;  // the lines under the last located diagnostic may be passed on
  for_each_line(diagnostics, [&](const std::string& line) {
    std::smatch match;
    if (std::regex_search(line, match, located)) {
      quoting = own(match.str(1));
      out += quoting ? line
                     : match.str(0) + ": (not quoted: a file other than the candidate's source)";
    } else if (quoting || std::regex_search(line, always_kept)) {
      out += line;
    } else {
      return;
    }
    out += '\n';
  });
  if (!diagnostics.empty() && !diagnostics.ends_with('\n') && !out.empty()) out.pop_back();
  return out;
}

}  // namespace r3
