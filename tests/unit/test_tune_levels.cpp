// What the compiler level of the search means to each backend's compiler.
#include <gtest/gtest.h>

#include <algorithm>

#include "levels.hpp"
#include "r3/tune_config.hpp"

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

TEST(TuneLevels, CudaCompilerLevelMeansNvrtcAndPtxasOptions) {
  config::TuneConfig config = config_for("cuda");
  LevelBuilder builder(config, config::Backend::cuda);
  auto level = builder.build(Level::compiler, {});
  ASSERT_TRUE(level);
  EXPECT_EQ(names(level->space),
            (std::vector<std::string>{"opt", "fast_math", "prec_div", "max_registers"}));
  replay::Variant variant;
  builder.apply(Level::compiler, *level, everything_on(level->space), variant);
  EXPECT_EQ(variant.flags, (std::vector<std::string>{"--use_fast_math", "--prec-div=false",
                                                     "--maxrregcount=32", "-O3"}));
  replay::Variant defaults;
  builder.apply(Level::compiler, *level, level->defaults, defaults);
  EXPECT_EQ(defaults.flags, (std::vector<std::string>{"-O3"}));
}

TEST(TuneLevels, HostCompilerLevelMeansClangFlagsAndPassPipelines) {
  config::TuneConfig config = config_for("host");
  LevelBuilder builder(config, config::Backend::host);
  auto level = builder.build(Level::compiler, {});
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
