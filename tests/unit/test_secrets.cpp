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
