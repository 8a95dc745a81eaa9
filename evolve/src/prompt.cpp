#include "r3/evolve/prompt.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "builtin_prompts.hpp"
#include "r3/error.hpp"
#include "r3/files.hpp"

namespace r3::evolve {
namespace {

std::string read(const std::filesystem::path& path) {
  return read_text_file(path, "prompt template", 1 << 20);
}

std::string milliseconds(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g ms", ms);
  return text;
}

std::string bytes(std::uint64_t n) {
  char text[32];
  if (n >= (1ull << 30)) {
    std::snprintf(text, sizeof text, "%.3g GiB", static_cast<double>(n) / (1ull << 30));
  } else if (n >= (1ull << 20)) {
    std::snprintf(text, sizeof text, "%.3g MiB", static_cast<double>(n) / (1ull << 20));
  } else if (n >= 1024) {
    std::snprintf(text, sizeof text, "%.3g KiB", static_cast<double>(n) / 1024);
  } else {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(n));
  }
  return text;
}

std::string dim3(const capture::Dim3& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

}  // namespace

std::string describe(const KernelResources& r) {
  std::vector<std::string> parts;
  if (r.registers_per_thread)
    parts.push_back(std::to_string(*r.registers_per_thread) + " registers/thread");
  if (r.spill_bytes) parts.push_back(bytes(*r.spill_bytes) + " spilled");
  if (r.shared_memory_bytes)
    parts.push_back(bytes(*r.shared_memory_bytes) + " shared memory/block");
  if (r.code_bytes) parts.push_back(bytes(*r.code_bytes) + " of code");
  return join(parts);
}

std::map<std::string, double> behaviour_of(const KernelResources& r) {
  std::map<std::string, double> b;
  if (r.registers_per_thread) b["registers"] = *r.registers_per_thread;
  if (r.spill_bytes) b["spills"] = static_cast<double>(*r.spill_bytes);
  if (r.shared_memory_bytes) b["shared_memory"] = static_cast<double>(*r.shared_memory_bytes);
  if (r.code_bytes) b["code_size"] = static_cast<double>(*r.code_bytes);
  return b;
}

std::string describe(const capture::DeviceInfo& d) {
  std::vector<std::string> facts;
  if (!d.architecture.empty()) facts.push_back(d.architecture);
  if (d.multiprocessor_count > 0) {
    facts.push_back(std::to_string(d.multiprocessor_count) +
                    (d.backend == "host" ? " cores" : " SMs"));
  }
  if (d.memory_bytes > 0) facts.push_back(bytes(d.memory_bytes));
  if (d.l2_cache_bytes > 0) facts.push_back(bytes(d.l2_cache_bytes) + " L2");
  if (d.memory_bandwidth_gbs > 0)
    facts.push_back(std::to_string(static_cast<long>(d.memory_bandwidth_gbs)) + " GB/s");
  const std::string name = d.name.empty() ? "an unknown device" : d.name;
  return facts.empty() ? name : name + " (" + join(facts) + ")";
}

std::string describe_launches(const capture::Kernel& kernel) {
  if (kernel.launches.empty()) return "no recorded launches";
  std::vector<std::string> shapes;
  std::uint64_t read = 0, changed = 0;
  std::uint32_t dynamic_shared = 0;
  double app_us = 0;
  int timed = 0;
  for (const capture::Launch& l : kernel.launches) {
    std::string shape = "grid " + dim3(l.grid) + " block " + dim3(l.block);
    if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) shapes.push_back(shape);
    for (const capture::Region& r : l.prologue) read += r.size;
    for (const capture::Region& r : l.epilogue) changed += r.size;
    dynamic_shared = std::max(dynamic_shared, l.shared_memory_bytes);
    if (l.app_time_us) {
      app_us += *l.app_time_us;
      ++timed;
    }
  }
  const auto n = kernel.launches.size();
  std::string text = std::to_string(n) + " recorded launch" + (n == 1 ? "" : "es") + "; ";
  if (shapes.size() > 4) {
    text += std::to_string(shapes.size()) + " shapes, e.g. " + shapes[0];
  } else {
    text += join(shapes);
  }
  if (dynamic_shared > 0) text += "; " + bytes(dynamic_shared) + " dynamic shared memory";
  text += "; per launch it reads " + bytes(read / n) + " and changes " + bytes(changed / n);
  if (timed > 0) {
    char us[48];
    std::snprintf(us, sizeof us, "; %.4g us per launch in the application", app_us / timed);
    text += us;
  }
  return text;
}

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
      {"device", describe(c.device)},
      {"source", c.source},
      {"fence", c.language == "CUDA" ? "cuda" : "cpp"},
      {"launches", c.launches.empty() ? "" : "Recorded: " + c.launches},
      {"resources", describe(c.resources).empty() ? "" : "Resources: " + describe(c.resources)},
      {"current_time", c.current_time_ms > 0 ? milliseconds(c.current_time_ms) : "not timed yet"},
      {"best", best},
      {"failures", failures}};
  return {{"system", fill_template(system_, values)}, {"user", fill_template(user_, values)}};
}

}  // namespace r3::evolve
