#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "r3/error.hpp"
#include "r3/tune_config.hpp"

namespace {

namespace fs = std::filesystem;
using namespace r3::config;

const fs::path kData = R3_TEST_DATA_DIR;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every file under bad/ starts with "# expect: LINE:COLUMN KEY | MESSAGE"; parsing it must fail
// with a ConfigError at that line and column, for that key, with that text in its message.
TEST(TuneConfigBadFiles, EachErrorNamesFileLineKeyAndProblem) {
  const std::regex header(R"(^# expect: (\d+):(\d+) (\S+) \| (.+)$)");
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(kData / "tune" / "bad")) {
    SCOPED_TRACE(entry.path().filename().string());
    std::string text = read_file(entry.path());
    std::string first_line = text.substr(0, text.find('\n'));
    std::smatch m;
    if (!std::regex_match(first_line, m, header)) {
      ADD_FAILURE() << "no expectation line";
      continue;
    }
    try {
      parse_tune_config(text, entry.path());
      ADD_FAILURE() << "accepted";
    } catch (const r3::ConfigError& e) {
      const r3::ErrorContext& c = e.context();
      EXPECT_EQ(c.file, entry.path().string());
      EXPECT_EQ(c.line, std::stoi(m[1])) << e.what();
      EXPECT_EQ(c.column, std::stoi(m[2])) << e.what();
      EXPECT_EQ(c.key, m[3] == "-" ? "" : m[3].str()) << e.what();
      EXPECT_NE(e.message().find(m[4].str()), std::string::npos) << e.what();
      // what() starts with FILE:LINE:COLUMN so editors can jump there.
      if (c.line > 0) {
        EXPECT_EQ(
            std::string(e.what()).rfind(c.file + ":" + m[1].str() + ":" + m[2].str() + ": ", 0), 0u)
            << e.what();
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 30);
}

TEST(TuneConfig, MinimalFileGetsDefaultsAndResolvedPaths) {
  fs::path file = kData / "tune" / "good" / "minimal.yaml";
  TuneConfig config = load_tune_config(file);
  fs::path dir = fs::absolute(file).parent_path();
  EXPECT_EQ(config.capture, dir / "demo.h5");
  ASSERT_EQ(config.kernels.size(), 1u);
  EXPECT_EQ(config.kernels[0].name, "stencil2d");
  EXPECT_TRUE(config.kernels[0].source.empty());
  EXPECT_TRUE(config.kernels[0].launches.empty());
  EXPECT_EQ(config.backend, Backend::automatic);
  EXPECT_EQ(config.output.directory, dir / "r3-results");
  EXPECT_EQ(config.output.run_database, dir / "r3-results" / "run.h5");
  EXPECT_FALSE(config.llm.enabled());
  EXPECT_EQ(config.llm.api_key_env, "OPENAI_API_KEY");
  const TuneConfig defaults;
  EXPECT_EQ(config.search.launch.block_x, defaults.search.launch.block_x);
  EXPECT_EQ(config.search.source.mutators, kKnownMutators);
  EXPECT_EQ(config.timing.repeats, defaults.timing.repeats);
  EXPECT_EQ(config.budget.wall_time_s, 3600);
  EXPECT_EQ(config.text, read_file(file));
}

TEST(TuneConfig, FullFileSetsEveryValue) {
  fs::path file = kData / "tune" / "good" / "full.yaml";
  TuneConfig c = load_tune_config(file);
  fs::path dir = fs::absolute(file).parent_path();
  EXPECT_EQ(c.capture, dir / "captures" / "heat.h5");
  EXPECT_EQ(c.backend, Backend::cuda);
  ASSERT_EQ(c.kernels.size(), 2u);
  const KernelSelection& k = c.kernels[0];
  EXPECT_EQ(k.source, dir / "src" / "stencil.cu");
  EXPECT_EQ(k.entry, "stencil2d");
  EXPECT_EQ(k.launches, (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(k.defines.at("TILE"), "16");
  EXPECT_EQ(k.defines.at("USE_FMA"), "1");
  EXPECT_EQ(k.include_dirs, (std::vector<fs::path>{dir / "include", "/opt/include"}));
  EXPECT_EQ(k.flags, (std::vector<std::string>{"-std=c++17"}));
  EXPECT_EQ(c.kernels[1].name, "Kokkos::axpy");

  EXPECT_EQ(c.search.seed, 42u);
  EXPECT_EQ(c.search.batch_size, 64u);
  EXPECT_DOUBLE_EQ(c.search.source.share, 0.4);
  EXPECT_EQ(c.search.source.mutators, (std::vector<std::string>{"restrict", "unroll"}));
  EXPECT_EQ(c.search.compiler.compilers, (std::vector<Compiler>{Compiler::nvrtc}));
  EXPECT_EQ(c.search.compiler.opt_levels, (std::vector<int>{2, 3}));
  EXPECT_EQ(c.search.compiler.passes.max_length, 4u);
  EXPECT_FALSE(c.search.compiler.passes.repeat);
  EXPECT_EQ(c.search.compiler.passes.baseline, "default<O2>");
  EXPECT_EQ(c.search.launch.max_threads, 512u);
  EXPECT_EQ(c.search.launch.grid, "ceil(4096 / bx)");
  EXPECT_FALSE(c.search.parameters.enabled);
  EXPECT_EQ(c.search.archive.descriptors, (std::vector<std::string>{"registers", "occupancy"}));
  EXPECT_EQ(c.search.bo.initial_design, InitialDesign::latin_hypercube);
  EXPECT_EQ(c.search.bo.acquisition, Acquisition::ucb);
  EXPECT_EQ(c.search.bo.batch, BatchStrategy::local_penalization);

  EXPECT_EQ(c.budget.evaluations, 5000u);
  EXPECT_DOUBLE_EQ(c.budget.wall_time_s, 2.5 * 3600);
  EXPECT_DOUBLE_EQ(c.budget.job_end_margin_s, 600);
  EXPECT_DOUBLE_EQ(c.budget.llm_cost, 25.5);

  EXPECT_TRUE(c.llm.enabled());
  EXPECT_EQ(c.llm.model, "qwen2.5-coder-32b");
  EXPECT_EQ(c.llm.api_key_env, "R3_LLM_KEY");
  EXPECT_DOUBLE_EQ(c.llm.timeout_s, 90);
  EXPECT_EQ(c.llm.concurrency, 16u);
  EXPECT_EQ(c.llm.templates, dir / "prompts");

  using r3::capture::ElementType;
  EXPECT_EQ(c.verify.types.at(ElementType::f32), Tolerance::relative(1e-4, 1e-6));
  EXPECT_EQ(c.verify.types.at(ElementType::f64), Tolerance::exact());
  EXPECT_EQ(c.verify.regions.at("residual"), Tolerance::relative(0, 1e-3));
  EXPECT_FALSE(c.verify.after_timing);

  EXPECT_EQ(c.timing.warmup, 5u);
  EXPECT_TRUE(c.timing.flush_l2);
  EXPECT_DOUBLE_EQ(c.timing.candidate_timeout_s, 60);
  EXPECT_EQ(c.timing.compile_threads, std::optional<std::uint32_t>(4));
  EXPECT_EQ(c.output.directory, fs::path("/scratch/r3/heat"));
  EXPECT_EQ(c.output.run_database, fs::path("/scratch/r3/heat/heat-run.h5"));
}

// The resolved YAML that --dry-run prints is itself a valid tune.yaml with the same meaning.
TEST(TuneConfig, ResolvedYamlParsesToTheSameConfiguration) {
  for (const char* name : {"minimal.yaml", "full.yaml"}) {
    SCOPED_TRACE(name);
    TuneConfig original = load_tune_config(kData / "tune" / "good" / name);
    std::string resolved = to_yaml(original);
    TuneConfig again = parse_tune_config(resolved, original.file);
    EXPECT_EQ(to_yaml(again), resolved);
    EXPECT_EQ(again.capture, original.capture);
    EXPECT_EQ(again.verify.types, original.verify.types);
    EXPECT_EQ(again.verify.regions, original.verify.regions);
    EXPECT_EQ(again.budget.wall_time_s, original.budget.wall_time_s);
  }
}

TEST(TuneConfig, SecretsAreNeverEchoed) {
  const std::string secret = "sk-proj-THISISASECRETKEY0123456789";
  try {
    parse_tune_config("capture: a.h5\nkernels: [k]\nllm:\n  api_key_env: " + secret + "\n",
                      "tune.yaml");
    FAIL() << "a key in api_key_env was accepted";
  } catch (const r3::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find("THISISASECRET"), std::string::npos) << e.what();
  }
}

TEST(TuneConfig, MissingFileIsAConfigError) {
  try {
    load_tune_config("/nonexistent/tune.yaml");
    FAIL();
  } catch (const r3::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/tune.yaml: open: tune file does not exist");
  }
}

TEST(TuneConfig, FailPointsAtTheKeyOrItsNearestParent) {
  TuneConfig config = parse_tune_config("capture: a.h5\nkernels:\n  - stencil\n", "t.yaml");
  try {
    config.fail("kernels[0].name", "not in the capture");
    FAIL();
  } catch (const r3::ConfigError& e) {
    EXPECT_EQ(e.context().line, 3);  // short form: the item itself
    EXPECT_EQ(e.context().key, "kernels[0].name");
  }
  try {
    config.fail("capture", "cannot open");
    FAIL();
  } catch (const r3::ConfigError& e) {
    EXPECT_EQ(e.context().line, 1);
    EXPECT_EQ(e.context().column, 10);
  }
}

TEST(TuneConfig, ABlockMayNameTunablesAndSurvivesTheResolvedConfiguration) {
  TuneConfig config = parse_tune_config(
      "capture: a.h5\nkernels:\n  - name: k\n    block: [TILE, TILE / 2, 1]\n"
      "  - name: j\n    block: [64, 2, 1]\n",
      "t.yaml");
  EXPECT_TRUE(config.kernels[0].block.empty());
  EXPECT_EQ(config.kernels[0].block_expressions,
            (std::vector<std::string>{"TILE", "TILE / 2", "1"}));
  EXPECT_EQ(config.kernels[1].block, (std::vector<std::uint32_t>{64, 2, 1}));
  EXPECT_TRUE(config.kernels[1].block_expressions.empty());
  TuneConfig again = parse_tune_config(to_yaml(config), config.file);
  EXPECT_EQ(again.kernels[0].block_expressions, config.kernels[0].block_expressions);
  EXPECT_EQ(again.kernels[1].block, config.kernels[1].block);
}

TEST(TuneConfig, ToleranceForARegionPrefersItsNameOverItsType) {
  TuneConfig config = parse_tune_config(
      "capture: a.h5\nkernels: [k]\nverify:\n  regions:\n    y: {rtol: 0.5}\n    hist: bitwise\n",
      "t.yaml");
  using r3::capture::ElementType;
  EXPECT_EQ(config.verify.for_region("y", ElementType::f32), Tolerance::relative(0.5, 0));
  EXPECT_EQ(config.verify.for_region("hist", ElementType::f32), Tolerance::exact());
  EXPECT_EQ(config.verify.for_region("x", ElementType::f32), Tolerance::relative(1e-5, 1e-8));
  EXPECT_EQ(config.verify.for_region("x", ElementType::i32), Tolerance::exact());
  EXPECT_EQ(config.verify.for_region("x", ElementType::unknown), Tolerance::exact());
}

TEST(Durations, ParseUnitsAndCombinations) {
  EXPECT_EQ(parse_duration("90"), 90.0);
  EXPECT_EQ(parse_duration("90s"), 90.0);
  EXPECT_EQ(parse_duration("1.5m"), 90.0);
  EXPECT_EQ(parse_duration("2h"), 7200.0);
  EXPECT_EQ(parse_duration("1h30m"), 5400.0);
  EXPECT_EQ(parse_duration("250ms"), 0.25);
  EXPECT_EQ(parse_duration("1d"), 86400.0);
  for (const char* bad :
       {"", "h", "1x", "-5", "1h 30m", "5 s", "1h30", "s5", "99999999999999999999d"}) {
    EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
  }
}

TEST(Durations, FormatReadsBack) {
  EXPECT_EQ(format_duration(5400), "1h30m");
  EXPECT_EQ(format_duration(3600), "1h");
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(0.25), "0.25s");
  EXPECT_EQ(format_duration(1234567.5), "1234567.5s");
  for (double seconds : {1.0, 59.0, 61.0, 3599.0, 86400.0, 0.5, 12.5, 1234567.5, 1e-7, 0.1}) {
    EXPECT_EQ(parse_duration(format_duration(seconds)), seconds) << seconds;
  }
}

// Key paths of a resolved tune.yaml: leaves, lists of mappings ("kernels", then "kernels[].name"),
// and mappings whose keys the user chooses (defines, tolerance tables) as one key each.
void collect_keys(const YAML::Node& node, const std::string& prefix, std::set<std::string>& keys) {
  static const std::set<std::string> user_keyed = {"kernels[].defines", "verify.types",
                                                   "verify.regions"};
  for (const auto& entry : node) {
    std::string key = prefix + entry.first.Scalar();
    const YAML::Node& value = entry.second;
    if (value.IsMap() && !user_keyed.contains(key)) {
      collect_keys(value, key + ".", keys);
    } else if (value.IsSequence() && value.size() > 0 && value[0].IsMap()) {
      keys.insert(key);
      collect_keys(value[0], key + "[].", keys);
    } else {
      keys.insert(key);
    }
  }
}

// docs/tune-yaml.md documents exactly the keys tune.yaml accepts.
TEST(TuneConfigDocs, ReferenceListsExactlyTheAcceptedKeys) {
  TuneConfig config = load_tune_config(kData / "tune" / "good" / "full.yaml");
  std::set<std::string> accepted;
  collect_keys(YAML::Load(to_yaml(config)), "", accepted);
  // The simulate backend's section is written only with that backend.
  TuneConfig simulated = load_tune_config(kData / "tune" / "good" / "simulate.yaml");
  EXPECT_EQ(simulated.backend, Backend::simulate);
  EXPECT_DOUBLE_EQ(simulated.simulate.run_s, 3.0);
  EXPECT_DOUBLE_EQ(simulated.simulate.kernel_s, 2e-3);
  collect_keys(YAML::Load(to_yaml(simulated)), "", accepted);

  std::set<std::string> documented;
  std::ifstream doc(fs::path(R3_TEST_SOURCE_DIR) / "docs" / "tune-yaml.md");
  const std::regex row(R"(^\| `([a-z0-9_.\[\]]+)` \|)");
  for (std::string line; std::getline(doc, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) documented.insert(m[1]);
  }
  for (const std::string& key : accepted) {
    EXPECT_TRUE(documented.contains(key)) << "not documented in docs/tune-yaml.md: " << key;
  }
  for (const std::string& key : documented) {
    EXPECT_TRUE(accepted.contains(key)) << "documented but not accepted: " << key;
  }
  EXPECT_GT(accepted.size(), 60u);
}

}  // namespace
