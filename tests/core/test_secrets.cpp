// Secrets are known by the names of the variables that hold them and scrubbed from text that
// came from a candidate; the sandbox child's environment keeps none of them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "r3/secrets.hpp"

namespace {

TEST(Secrets, NamesThatHoldSecretsAreRecognised) {
  for (const char* name : {"OPENAI_API_KEY", "GITHUB_TOKEN", "db_password", "AWS_SECRET_ACCESS_KEY",
                           "R3_LLM_API_KEY", "MY_CREDENTIALS", "HTTP_AUTH"})
    EXPECT_TRUE(r3::names_a_secret(name)) << name;
  for (const char* name : {"PATH", "HOME", "CUDA_VISIBLE_DEVICES", "LANG", "R3_LOG_LEVEL"})
    EXPECT_FALSE(r3::names_a_secret(name)) << name;
}

TEST(Secrets, EveryOccurrenceOfAKnownSecretIsRedacted) {
  std::string key = "sk-redact-me-0123456789";
  std::string token = "ghp_AnotherSecretValue42";
  std::vector<std::string> environment = {"PATH=/usr/bin", "SOME_TOKEN=" + token, "SHORT_KEY=abc"};
  std::vector<char*> envp;
  for (auto& v : environment) envp.push_back(v.data());
  envp.push_back(nullptr);
  r3::remember_secrets_from_environment(envp.data());
  r3::remember_secret(key);
  std::string text = "error: '" + key + "' and again " + key + "; token " + token + "; abc; /usr/bin";
  std::string redacted = r3::redact_secrets(text);
  EXPECT_EQ(redacted.find(key), std::string::npos) << redacted;
  EXPECT_EQ(redacted.find(token), std::string::npos) << redacted;
  EXPECT_NE(redacted.find("[secret]' and again [secret]"), std::string::npos) << redacted;
  EXPECT_NE(redacted.find("abc; /usr/bin"), std::string::npos)
      << "short values and ordinary variables are left alone: " << redacted;
}

}  // namespace

// A candidate that includes a readable file (beside the application's source, say) gets no
// line of it back in its diagnostics: Clang's and NVRTC's diagnostics located elsewhere keep
// their place and severity only; its own source is quoted as before.
TEST(Secrets, DiagnosticsQuoteOnlyTheCandidatesOwnSource) {
  const std::string clang =
      "In file included from candidate.cu:1:\n"
      "/app/src/tokens.h:1:1: error: unknown type name 'TOPSECRET_42'\n"
      "TOPSECRET_42 = yes\n"
      "^\n"
      "/app/src/candidate.cu:7:3: error: use of undeclared identifier 'foo'\n"
      "  foo(1);\n"
      "  ^\n"
      "2 errors generated.\n";
  const std::string quoted = r3::quote_only_own_source(clang, {"candidate.cu"});
  EXPECT_EQ(quoted.find("TOPSECRET"), std::string::npos) << quoted;
  EXPECT_NE(quoted.find("/app/src/tokens.h:1:1: error: (not quoted"), std::string::npos) << quoted;
  EXPECT_NE(quoted.find("candidate.cu:7:3: error: use of undeclared identifier 'foo'\n  foo(1);"),
            std::string::npos)
      << quoted;
  EXPECT_NE(quoted.find("In file included from candidate.cu:1:"), std::string::npos);
  EXPECT_NE(quoted.find("2 errors generated."), std::string::npos);
  const std::string nvrtc =
      "secret.h(3): error: identifier \"TOPSECRET_42\" is undefined\n"
      "  TOPSECRET_42 x;\n"
      "candidate.cu(9): warning #177-D: variable \"y\" was declared but never referenced\n";
  const std::string quoted_nvrtc = r3::quote_only_own_source(nvrtc, {"candidate.cu"});
  EXPECT_EQ(quoted_nvrtc.find("TOPSECRET"), std::string::npos) << quoted_nvrtc;
  EXPECT_NE(quoted_nvrtc.find("candidate.cu(9): warning #177-D"), std::string::npos) << quoted_nvrtc;
  // A source of the same name in another file's path is not the candidate's.
  EXPECT_EQ(r3::quote_only_own_source("not_candidate.cu:1:1: error: X_SECRET\n", {"candidate.cu"})
                .find("X_SECRET"),
            std::string::npos);
}

// A unit cut from the application's files says where each piece is from; those files are its own.
TEST(Secrets, TheFilesALinesDirectiveNamesAreTheCandidatesOwn) {
  const auto files = r3::own_source_files(
      "unit.cu", "#line 12 \"/app/srad_kernel.cu\"\n__global__ void k() {}\n  # line 3 \"srad.h\"\n");
  EXPECT_EQ(files, (std::vector<std::string>{"unit.cu", "/app/srad_kernel.cu", "srad.h"}));
  const std::string diagnostics = "/app/srad_kernel.cu:14:5: error: expected ';'\n  int x\n";
  EXPECT_EQ(r3::quote_only_own_source(diagnostics, files), diagnostics);
}
