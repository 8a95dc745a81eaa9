// The prompt of one LLM rewrite: a system message (the rules) and a user message (the kernel,
// what is known about it, what has been tried). Both come from templates with {{name}}
// placeholders; a directory given in llm.templates can replace either file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "r3/capture.hpp"
#include "r3/evolve/llm_client.hpp"

namespace r3::evolve {

// What the compiler reports of a variant (ptxas -v, or the host object): unknown values are
// left out of prompts and behaviour descriptors.
struct KernelResources {
  std::optional<std::uint32_t> registers_per_thread;
  std::optional<std::uint64_t> spill_bytes;          // stores + loads to local memory
  std::optional<std::uint64_t> shared_memory_bytes;  // static, per block
  std::optional<std::uint64_t> code_bytes;
};
std::string describe(const KernelResources& resources);  // "40 registers/thread, 0 B spilled, ..."
// The archive's behaviour descriptors (registers, spills, shared_memory, code_size) known for it.
std::map<std::string, double> behaviour_of(const KernelResources& resources);

// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 80 GiB, 3352 GB/s)".
std::string describe(const capture::DeviceInfo& device);
// The recorded launches of a kernel: their count, distinct grid/block shapes, dynamic shared
// memory, how much memory they read and change, and their time in the application.
std::string describe_launches(const capture::Kernel& kernel);

struct PromptContext {
  std::string entry;      // the kernel function
  std::string signature;  // its declaration, which must not change
  std::string language;   // "CUDA" or "C++"
  std::string compiler;   // "NVRTC", "Clang"
  capture::DeviceInfo device;
  std::string source;         // the parent's source
  std::string launches;       // describe_launches() of the recorded kernel
  KernelResources resources;  // of the parent
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
