// Secrets this process knows (the LLM's API key; any environment variable whose name says it
// holds one), and the scrubbing of text that came from a candidate (its messages, its compiler
// diagnostics) before that text is stored, logged or put into a prompt. docs/security.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

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

// Compiler diagnostics (Clang's "file:line:col: error: ..." and NVRTC's "file(line): error: ...")
// that quote only the candidate's own source: a diagnostic located in a file that is not one of
// `own_files` keeps its place and severity, but its text and the source lines quoted under it are
// left out. Otherwise a candidate could include a readable file (a header beside the
// application's source holding a token, say) and read it back in its error messages.
std::string quote_only_own_source(std::string_view diagnostics,
                                  const std::vector<std::string>& own_files);

// The files a candidate's source is made of: its own name, and the files its `#line` directives
// name (a unit that r3 extract cut from the application's files says where each piece is from).
std::vector<std::string> own_source_files(std::string_view source_name,
                                          std::string_view source_text);

}  // namespace r3
