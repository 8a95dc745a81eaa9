// What the source level lets its users choose, as plain values: the LLM endpoint and how it is
// used (LlmClient), and the MAP-Elites archive (Archive). tune.yaml's `llm` and
// `search.archive` sections (r3/config/tune_config.hpp) map onto these.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace r3::evolve {

struct LlmOptions {
  std::string endpoint;  // base URL (".../v1"); empty: built-in mutators only
  std::string model;
  std::string api_key_env = "OPENAI_API_KEY";  // NAME of the variable holding the key
  double temperature = 0.7;
  std::uint32_t max_tokens = 4096;
  std::uint64_t max_answer_bytes = std::uint64_t{1} << 20;  // a longer HTTP answer is refused
  double timeout_s = 120;
  std::uint32_t concurrency = 4;
  std::uint32_t max_retries = 5;
  double prompt_cost_per_mtok = 0;      // per million prompt tokens
  double completion_cost_per_mtok = 0;  // per million completion tokens
  std::filesystem::path templates;      // directory overriding the built-in prompt templates
  std::filesystem::path
      ca_bundle;  // PEM certificates to verify the endpoint with (default: the system's)
  bool enabled() const { return !endpoint.empty(); }
};

// The behaviour descriptors an archive can bin its elites by.
inline const std::vector<std::string> kArchiveDescriptors = {"registers", "shared_memory",
                                                             "code_size", "spills", "occupancy"};

struct ArchiveOptions {
  std::uint32_t islands = 4;
  std::uint32_t migration_interval = 5;  // generations
  std::vector<std::string> descriptors = {"registers", "shared_memory", "code_size"};
  std::uint32_t bins = 4;              // per descriptor
  double exploration = 0.2;            // share of parents drawn outside the elites
  double similarity_threshold = 0.95;  // near-duplicate sources above this are dropped
};

// The built-in mutators (r3/evolve/mutators.hpp), by the names tune.yaml lists them with.
inline const std::vector<std::string> kMutatorNames = {"restrict", "unroll",      "launch_bounds",
                                                       "ldg",      "hoist_loads", "parametrise"};

}  // namespace r3::evolve
