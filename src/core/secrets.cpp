#include "r3/secrets.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>
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

}  // namespace r3
