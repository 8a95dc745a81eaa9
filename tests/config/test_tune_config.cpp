#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "r3/config/tune_config.hpp"
#include "r3/error.hpp"

namespace {

namespace fs = std::filesystem;
using namespace r3::config;
using r3::replay::Tolerance;

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
  EXPECT_EQ(config.search.source.mutators, r3::evolve::kMutatorNames);
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
  EXPECT_EQ(c.search.bo.initial_design, r3::bo::InitialDesign::latin_hypercube);
  EXPECT_EQ(c.search.bo.acquisition, r3::bo::Acquisition::ucb);
  EXPECT_EQ(c.search.bo.batch, r3::bo::BatchStrategy::kriging_believer);

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

std::set<std::string> declared_keys() {
  std::set<std::string> keys;
  for (const KeyDescription& key : describe_keys()) keys.insert(key.key);
  return keys;
}

// The declarations describe exactly the keys the resolved configuration writes (and so reads:
// the resolved configuration is read back whole by ResolvedConfigReadsBackTheSame).
TEST(TuneConfigKeys, DeclarationsAreTheKeysWrittenBack) {
  TuneConfig config = load_tune_config(kData / "tune" / "good" / "full.yaml");
  std::set<std::string> written;
  collect_keys(YAML::Load(to_yaml(config)), "", written);
  // The simulate backend's section is written only with that backend.
  TuneConfig simulated = load_tune_config(kData / "tune" / "good" / "simulate.yaml");
  EXPECT_EQ(simulated.backend, Backend::simulate);
  EXPECT_DOUBLE_EQ(simulated.simulate.run_s, 3.0);
  EXPECT_DOUBLE_EQ(simulated.simulate.kernel_s, 2e-3);
  collect_keys(YAML::Load(to_yaml(simulated)), "", written);
  EXPECT_EQ(written, declared_keys());
  EXPECT_GT(written.size(), 60u);
  for (const KeyDescription& key : describe_keys()) {
    EXPECT_FALSE(key.type.empty()) << key.key;
    EXPECT_FALSE(key.default_value.empty()) << key.key;
    EXPECT_FALSE(key.doc.empty()) << key.key;
    EXPECT_EQ(key.doc.find('\n'), std::string::npos) << key.key;
  }
}

// A declared default is the default the parser leaves: a file that writes a key's declared
// default back changes nothing.
TEST(TuneConfigKeys, DeclaredDefaultsAreWhatAnEmptyFileGets) {
  const TuneConfig plain = parse_tune_config("capture: a.h5\nkernels: [k]\n", "t.yaml");
  for (const KeyDescription& key : describe_keys()) {
    if (key.default_value.size() < 2 || key.default_value.front() != '`' ||
        key.default_value.find('`', 1) != key.default_value.size() - 1 ||
        key.key.starts_with("kernels") || key.key.starts_with("output.") ||
        key.key.starts_with("simulate."))
      continue;  // in words, or relative to the file
    // "a.b.c" with value V as nested YAML.
    std::string yaml = "capture: a.h5\nkernels: [k]\n", indent;
    std::string rest = key.key;
    for (std::size_t dot; (dot = rest.find('.')) != std::string::npos;
         rest = rest.substr(dot + 1)) {
      yaml += indent + rest.substr(0, dot) + ":\n";
      indent += "  ";
    }
    yaml += indent + rest + ": " + key.default_value.substr(1, key.default_value.size() - 2) + "\n";
    const TuneConfig explicit_default = parse_tune_config(yaml, "t.yaml");
    EXPECT_EQ(to_yaml(explicit_default), to_yaml(plain)) << key.key << "\n" << yaml;
  }
}

// docs/tune-yaml.md has a row for every declared key, with the declared type and default, and no
// row for anything else.
TEST(TuneConfigDocs, ReferenceRowsAreTheDeclaredKeys) {
  std::map<std::string, std::pair<std::string, std::string>> documented;  // key -> type, default
  std::ifstream doc(fs::path(R3_TEST_SOURCE_DIR) / "docs" / "tune-yaml.md");
  const std::regex row(R"(^\| `([a-z0-9_.\[\]]+)` \| (.*?) \| (.*?) \| )");
  for (std::string line; std::getline(doc, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) documented[m[1]] = {m[2], m[3]};
  }
  const std::set<std::string> declared = declared_keys();
  for (const KeyDescription& key : describe_keys()) {
    auto it = documented.find(key.key);
    if (it == documented.end()) {
      ADD_FAILURE() << "not documented in docs/tune-yaml.md: " << key.key;
      continue;
    }
    EXPECT_EQ(it->second.first, key.type) << "type of " << key.key;
    EXPECT_EQ(it->second.second, key.default_value) << "default of " << key.key;
  }
  for (const auto& [key, columns] : documented) {
    EXPECT_TRUE(declared.contains(key)) << "documented but not declared: " << key;
  }
}

}  // namespace
