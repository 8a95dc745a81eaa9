// The prompt builder: every fact of the context reaches the messages, templates can be replaced
// from a directory, and a missing directory is an error naming it.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "r3/error.hpp"
#include "r3/evolve/prompt.hpp"
#include "support/temp_dir.hpp"

namespace r3::evolve {
namespace {

capture::DeviceInfo h100() {
  capture::DeviceInfo d;
  d.backend = "cuda";
  d.name = "NVIDIA H100 80GB HBM3";
  d.architecture = "sm_90";
  d.multiprocessor_count = 132;
  d.memory_bytes = 80ull << 30;
  d.memory_bandwidth_gbs = 3352;
  return d;
}

capture::Kernel recorded_stencil() {
  capture::Kernel k;
  k.name = "stencil2d";
  for (int i = 0; i < 3; ++i) {
    capture::Launch l;
    l.grid = {64, 64, 1};
    l.block = {32, 8, 1};
    l.prologue = {
        {"in", capture::RegionKind::allocation, 0x1000, 4u << 20, capture::ElementType::f32, {}},
        {"out",
         capture::RegionKind::allocation,
         0x900000,
         4u << 20,
         capture::ElementType::f32,
         {}}};
    l.epilogue = {l.prologue[1]};
    l.app_time_us = 20.0 + i;
    k.launches.push_back(l);
  }
  k.launches[2].block = {16, 16, 1};
  return k;
}

PromptContext context() {
  PromptContext c;
  c.entry = "stencil2d";
  c.signature = "__global__ void stencil2d(const float* in, float* out, int n, float alpha)";
  c.language = "CUDA";
  c.compiler = "NVRTC";
  c.device = h100();
  c.source =
      "__global__ void stencil2d(const float* in, float* out, int n, float alpha) { /* body */ }";
  c.launches = describe_launches(recorded_stencil());
  c.resources.registers_per_thread = 40;
  c.resources.spill_bytes = 0;
  c.resources.shared_memory_bytes = 2048;
  c.current_time_ms = 0.125;
  c.best = {{"2D tiling in shared memory, R3_TILE=32", 0.1}};
  c.failures = {"error: use of undeclared identifier 'tile' (line 7)",
                "verification: out[17] = 3.5, expected 3.25"};
  return c;
}

TEST(Prompt, DescribesTheDeviceLaunchesAndResources) {
  EXPECT_EQ(describe(h100()), "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 80 GiB, 3352 GB/s)");
  EXPECT_EQ(describe_launches(recorded_stencil()),
            "3 recorded launches; grid (64, 64, 1) block (32, 8, 1), grid (64, 64, 1) block (16, "
            "16, 1); per launch "
            "it reads 8 MiB and changes 4 MiB; 21 us per launch in the application");
  EXPECT_EQ(describe(context().resources),
            "40 registers/thread, 0 B spilled, 2 KiB shared memory/block");
  EXPECT_EQ(
      behaviour_of(context().resources),
      (std::map<std::string, double>{{"registers", 40}, {"spills", 0}, {"shared_memory", 2048}}));
  EXPECT_EQ(describe(KernelResources{}), "");
  EXPECT_EQ(describe_launches(capture::Kernel{}), "no recorded launches");
}

std::string all_text(const std::vector<ChatMessage>& messages) {
  std::string text;
  for (const ChatMessage& m : messages) text += m.content + "\n";
  return text;
}

TEST(Prompt, CarriesEveryFactOfTheContext) {
  std::vector<ChatMessage> messages = PromptBuilder().build(context());
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0].role, "system");
  EXPECT_EQ(messages[1].role, "user");
  const std::string text = all_text(messages);
  const PromptContext c = context();
  for (const std::string& fact :
       {c.signature, describe(c.device), c.source, c.launches, describe(c.resources),
        c.best[0].summary, c.failures[0], c.failures[1], std::string("NVRTC"),
        std::string("0.125 ms"), std::string("0.1 ms"), std::string("```cuda"),
        std::string("R3_TUNABLE("), std::string("<<<<<<< SEARCH"),
        std::string(">>>>>>> REPLACE")}) {
    EXPECT_NE(text.find(fact), std::string::npos) << "missing: " << fact;
  }
  EXPECT_EQ(text.find("{{"), std::string::npos) << "an unfilled placeholder:\n" << text;
}

TEST(Prompt, SaysWhenNothingWasTriedYet) {
  PromptContext c = context();
  c.best.clear();
  c.failures.clear();
  c.current_time_ms = 0;
  c.language = "C++";
  const std::string text = all_text(PromptBuilder().build(c));
  EXPECT_NE(text.find("- none yet"), std::string::npos);
  EXPECT_NE(text.find("- none\n"), std::string::npos);
  EXPECT_NE(text.find("not timed yet"), std::string::npos);
  EXPECT_NE(text.find("```cpp"), std::string::npos);
}

TEST(Prompt, TemplatesComeFromTheDirectoryGiven) {
  test::TempDir dir;
  std::ofstream(dir / "user.txt") << "Kernel {{entry}} on {{device}}; {{unknown}} stays.";
  PromptBuilder builder(dir.path());
  std::vector<ChatMessage> messages = builder.build(context());
  EXPECT_EQ(messages[1].content,
            "Kernel stencil2d on NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 80 GiB, 3352 GB/s); "
            "{{unknown}} stays.");
  // system.txt was not overridden: the built-in one is used.
  EXPECT_NE(messages[0].content.find("Keep the signature of `stencil2d`"), std::string::npos);
  EXPECT_EQ(PromptBuilder::builtin("system.txt").find("{{entry}}") != std::string::npos, true);
}

TEST(Prompt, AMissingTemplateDirectoryIsAnErrorNamingIt) {
  try {
    PromptBuilder builder("/nonexistent/r3-prompts");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/r3-prompts"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("llm.templates"), std::string::npos) << e.what();
  }
  EXPECT_THROW(PromptBuilder::builtin("assistant.txt"), Error);
}

TEST(Prompt, FillTemplateReplacesEveryOccurrence) {
  EXPECT_EQ(fill_template("{{a}}+{{a}}={{b}} {{c", {{"a", "1"}, {"b", "2"}}), "1+1=2 {{c");
}

}  // namespace
}  // namespace r3::evolve
