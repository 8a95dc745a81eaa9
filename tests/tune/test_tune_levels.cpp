// What the compiler level of the search means to each backend's compiler.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "levels.hpp"
#include "r3/config/tune_config.hpp"

namespace r3::tune {
namespace {

config::TuneConfig config_for(std::string_view backend) {
  return config::parse_tune_config("capture: c.h5\nbackend: " + std::string(backend) +
                                       "\nkernels: [k]\nsearch:\n  levels:\n    compiler:\n"
                                       "      flags: [fast_math, prec_div]\n"
                                       "      opt_levels: [1, 3]\n"
                                       "      max_registers: [0, 32]\n",
                                   "/tmp/tune.yaml");
}

std::vector<std::string> names(const bo::Space& space) {
  std::vector<std::string> out;
  for (const bo::Parameter& p : space.parameters()) out.push_back(p.name);
  return out;
}

// Every categorical switch on, every ordinal at its largest value.
bo::Configuration everything_on(const bo::Space& space) {
  bo::Configuration c;
  for (const bo::Parameter& p : space.parameters()) {
    if (p.kind == bo::Kind::sequence)
      c.values.push_back({});
    else
      c.values.push_back({static_cast<int>(p.choices()) - 1});
  }
  return c;
}

// NVRTC: its switches named and valued as the flags they produce; ptxas options; defaults that
// add no flag at all.
TEST(TuneLevels, NvrtcCompilerLevelNamesFlagsWithTheirPolarity) {
  config::TuneConfig config = config_for("cuda");
  LevelBuilder builder(config, config::Backend::cuda);
  auto level = builder.build(Level::compiler, {}, {}, CodePath::nvrtc);
  ASSERT_TRUE(level);
  EXPECT_EQ(names(level->space), (std::vector<std::string>{"ptxas_opt", "use_fast_math", "prec_div",
                                                           "max_registers", "cache_mode"}));
  replay::Variant variant;
  bo::Configuration all = everything_on(level->space);
  builder.apply(Level::compiler, *level, all, variant);
  // ptxas_opt at its largest is 3, ptxas's default: no -O flag.
  EXPECT_EQ(variant.flags, (std::vector<std::string>{"--use_fast_math", "--prec-div=false",
                                                     "--maxrregcount=32", "-dlcm=cg"}));
  EXPECT_NE(level->space.describe(all).find("prec_div=false"), std::string::npos)
      << level->space.describe(all);
  EXPECT_TRUE(variant.passes.empty()) << "no LLVM pipeline acts on NVRTC's code";
  replay::Variant defaults;
  builder.apply(Level::compiler, *level, level->defaults, defaults);
  EXPECT_TRUE(defaults.flags.empty());
  bo::Configuration o1 = level->defaults;
  o1.values[0] = {0};
  replay::Variant lower;
  builder.apply(Level::compiler, *level, o1, lower);
  EXPECT_EQ(lower.flags, std::vector<std::string>{"-O1"});
}

// Recorded code: only what acts on the recorded PTX through the JIT (-O, register limit, cache
// mode), and nothing at all by default, which is the recorded cubin as it is.
TEST(TuneLevels, RecordedCodeLevelSearchesOnlyJitOptions) {
  config::TuneConfig config = config_for("cuda");
  LevelBuilder builder(config, config::Backend::cuda);
  EXPECT_FALSE(builder.build(Level::compiler, {}, {}, CodePath::recorded, /*has_ptx=*/false))
      << "without PTX no option acts on the recorded cubin";
  auto level = builder.build(Level::compiler, {}, {}, CodePath::recorded, true);
  ASSERT_TRUE(level);
  EXPECT_EQ(names(level->space),
            (std::vector<std::string>{"code", "ptxas_opt", "max_registers", "cache_mode"}));
  EXPECT_TRUE(level->space.valid(level->defaults));
  replay::Variant cubin;
  builder.apply(Level::compiler, *level, level->defaults, cubin);
  EXPECT_TRUE(cubin.flags.empty()) << "the default is the recorded cubin, with no JIT option";
  EXPECT_EQ(level->space.describe(level->defaults), "code=cubin");
  bo::Configuration jit = {{{1}, {0}, {1}, {2}}};  // ptx, -O1, 32 registers, cg
  ASSERT_TRUE(level->space.valid(jit));
  replay::Variant variant;
  builder.apply(Level::compiler, *level, jit, variant);
  EXPECT_EQ(variant.flags, (std::vector<std::string>{"--maxrregcount=32", "-dlcm=cg", "-O1"}));
  // The rebuilt original: the recorded PTX through the JIT at ptxas's default, nothing else.
  std::optional<bo::Configuration> rebuilt = builder.recorded_jit(*level);
  ASSERT_TRUE(rebuilt);
  replay::Variant jit_only;
  builder.apply(Level::compiler, *level, *rebuilt, jit_only);
  EXPECT_EQ(jit_only.flags, std::vector<std::string>{"-O3"});
  // The switches that do nothing on recorded code are not searched.
  for (const std::string& name : names(level->space)) {
    EXPECT_NE(name, "prec_div");
    EXPECT_NE(name, "use_fast_math");
  }
  // Every point the search can draw either JITs with an -O level or is the cubin with no flag.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) {
    bo::Configuration c = level->space.sample(rng);
    replay::Variant v;
    builder.apply(Level::compiler, *level, c, v);
    const bool jits = std::any_of(v.flags.begin(), v.flags.end(),
                                  [](const std::string& f) { return f.starts_with("-O"); });
    EXPECT_EQ(jits, !v.flags.empty()) << level->space.describe(c);
  }
}

TEST(TuneLevels, HostCompilerLevelMeansClangFlagsAndPassPipelines) {
  config::TuneConfig config = config_for("host");
  LevelBuilder builder(config, config::Backend::host);
  auto level = builder.build(Level::compiler, {}, {}, CodePath::host);
  ASSERT_TRUE(level);
  std::vector<std::string> parameters = names(level->space);
  // prec_div has no Clang equivalent; register limits are a GPU matter.
  EXPECT_EQ(std::count(parameters.begin(), parameters.end(), "prec_div"), 0);
  EXPECT_EQ(std::count(parameters.begin(), parameters.end(), "max_registers"), 0);
  EXPECT_EQ(std::count(parameters.begin(), parameters.end(), "passes"), 1);
  replay::Variant variant;
  builder.apply(Level::compiler, *level, everything_on(level->space), variant);
  EXPECT_EQ(variant.flags, std::vector<std::string>{"-ffast-math"});
  EXPECT_EQ(variant.passes, "default<O3>");
  EXPECT_FALSE(builder.enabled(Level::launch));  // a host kernel has no launch shape
}

// The original keeps its launch shape: the launch level's default point is the recorded block
// (added to the lists when they lack it), and at that point no block is imposed.
TEST(TuneLevels, LaunchLevelStartsFromTheOriginalBlock) {
  config::TuneConfig config = config_for("cuda");
  LevelBuilder builder(config, config::Backend::cuda);
  auto level = builder.build(Level::launch, {}, capture::Dim3{16, 16, 1});
  ASSERT_TRUE(level);
  const auto& parameters = level->space.parameters();
  ASSERT_EQ(parameters.size(), 3u);
  auto default_label = [&](std::size_t i) {
    return parameters[i].labels.at(static_cast<std::size_t>(level->defaults.values[i].at(0)));
  };
  EXPECT_EQ(default_label(0), "16");  // not in the default block_x list, so added
  EXPECT_EQ(default_label(1), "16");
  EXPECT_EQ(default_label(2), "1");
  replay::Variant original;
  builder.apply(Level::launch, *level, level->defaults, original);
  EXPECT_FALSE(original.block) << "each launch keeps its recorded block";
  replay::Variant other;
  builder.apply(Level::launch, *level, everything_on(level->space), other);
  ASSERT_TRUE(other.block);
  EXPECT_EQ(other.block->x, 1024u);
  EXPECT_EQ(other.block->y, 32u);

  auto without = builder.build(Level::launch, {});
  ASSERT_TRUE(without);
  EXPECT_EQ(without->space.parameters()[0].labels.at(0), "32");
}

}  // namespace
}  // namespace r3::tune
