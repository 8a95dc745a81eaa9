// Secrets this process knows (the LLM's API key; any environment variable whose name says it
// holds one), and the scrubbing of text that came from a candidate (its messages, its compiler
// diagnostics) before that text is stored, logged or put into a prompt. docs/security.md.
#pragma once

#include <string>
#include <string_view>

namespace r3 {

// True for names such as OPENAI_API_KEY, GITHUB_TOKEN, DB_PASSWORD, AWS_SECRET_ACCESS_KEY.
bool names_a_secret(std::string_view variable_name);

// Remembers a value to scrub (values shorter than 8 characters are not: they would match
// ordinary text). Thread-safe.
void remember_secret(std::string value);

// Remembers the value of every variable of `environment` whose name names a secret.
void remember_secrets_from_environment(char** environment);

// `text` with every remembered secret replaced by "[secret]".
std::string redact_secrets(std::string text);

}  // namespace r3
