// The prompt of one LLM rewrite: a system message (the rules) and a user message (the kernel,
// what is known about it, what has been tried). Both come from templates with {{name}}
// placeholders; a directory given in llm.templates can replace either file.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "r3/evolve/llm_client.hpp"

namespace r3::evolve {

struct PromptContext {
  std::string entry;      // the kernel function
  std::string signature;  // its declaration, which must not change
  std::string language;   // "CUDA" or "C++"
  std::string compiler;   // "NVRTC", "Clang"
  std::string device;     // "NVIDIA H100 (132 SMs, 3350 GB/s)"
  std::string source;     // the parent's source
  std::string launch;     // recorded launch facts (grid, block, data sizes)
  std::string resources;  // registers, spills, shared memory of the parent
  double current_time_ms = 0;
  struct Attempt {
    std::string summary;  // what it was
    double time_ms = 0;
  };
  std::vector<Attempt> best;  // fastest variants so far
  std::vector<std::string>
      failures;  // recent failures with compiler diagnostics or verification errors
};

class PromptBuilder {
 public:
  // Templates from `directory` where it holds system.txt / user.txt, built-in ones otherwise.
  // Throws r3::Error when a given directory does not exist.
  explicit PromptBuilder(const std::filesystem::path& directory = {});
  std::vector<ChatMessage> build(const PromptContext& context) const;

  // The built-in template `name` ("system.txt", "user.txt").
  static const std::string& builtin(const std::string& name);

 private:
  std::string system_, user_;
};

// Replaces every {{name}} of `text` by values[name]; unknown placeholders stay as they are.
std::string fill_template(const std::string& text,
                          const std::vector<std::pair<std::string, std::string>>& values);

}  // namespace r3::evolve
