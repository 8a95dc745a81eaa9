#include "r3/tune_config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "r3/error.hpp"
#include "r3/files.hpp"
#include "yaml_map.hpp"

namespace r3::config {
namespace {

namespace fs = std::filesystem;
using yaml::Document;
using yaml::Map;

template <class Enum>
struct Names {
  std::vector<std::pair<std::string, Enum>> table;

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, value] : table) out.push_back(name);
    return out;
  }
  std::string_view name(Enum value) const {
    for (const auto& [name, v] : table) {
      if (v == value) return name;
    }
    return "?";
  }
  // `chosen` is one of names().
  Enum value(const std::string& chosen) const {
    for (const auto& [name, value] : table) {
      if (name == chosen) return value;
    }
    return table.front().second;
  }
  Enum decode(const Document& doc, const YAML::Node& node, const std::string& key) const {
    return value(yaml::decode_choice(doc, node, key, names()));
  }
};

const Names<Backend> kBackends{
    {{"auto", Backend::automatic},
     {"host", Backend::host},
     {"cuda", Backend::cuda},
     {"simulate", Backend::simulate}}};
const Names<Compiler> kCompilers{
    {{"nvrtc", Compiler::nvrtc}, {"clang", Compiler::clang}, {"recorded", Compiler::recorded}}};
const Names<Acquisition> kAcquisitions{
    {{"log_ei", Acquisition::log_ei}, {"ucb", Acquisition::ucb}}};
const Names<BatchStrategy> kBatchStrategies{
    {{"kriging_believer", BatchStrategy::kriging_believer},
     {"local_penalization", BatchStrategy::local_penalization}}};
const Names<InitialDesign> kInitialDesigns{
    {{"sobol", InitialDesign::sobol}, {"latin_hypercube", InitialDesign::latin_hypercube}}};

template <class Enum>
void read_enum(Map& map, std::string_view name, Enum& out, const Names<Enum>& names) {
  if (YAML::Node node = map.get(name); node.IsDefined()) {
    out = names.decode(map.doc(), node, map.key(name));
  }
}

fs::path resolve(const fs::path& base, const std::string& text) {
  fs::path path(text);
  const char* home = std::getenv("HOME");
  if (home != nullptr && (text == "~" || text.rfind("~/", 0) == 0)) {
    path = fs::path(home) / text.substr(std::min<std::size_t>(2, text.size()));
  }
  return (path.is_absolute() ? path : base / path).lexically_normal();
}

void read_path(Map& map, std::string_view name, fs::path& out, const fs::path& base) {
  YAML::Node node = map.get(name);
  if (!node.IsDefined()) return;
  std::string text = yaml::decode_string(map.doc(), node, map.key(name));
  out = text.empty() ? fs::path() : resolve(base, text);
}

void read_share(Map& map, double& share) {
  map.read("share", share);
  if (share < 0 || share > 1) map.fail("share", "must lie in [0, 1]");
}

bool is_identifier(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  return std::all_of(text.begin(), text.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

KernelSelection parse_kernel(const Document& doc, const YAML::Node& node, const std::string& key,
                             const fs::path& base) {
  KernelSelection kernel;
  if (node.IsScalar()) {  // "- stencil2d" is short for "- name: stencil2d"
    kernel.name = node.Scalar();
    if (kernel.name.empty()) doc.fail(node, key, "a kernel name must not be empty");
    return kernel;
  }
  Map map(doc, node, key);
  if (!map.has("name")) map.fail("name", "every kernel needs a name (as in the capture)");
  map.read("name", kernel.name);
  if (kernel.name.empty()) map.fail("name", "must not be empty");
  read_path(map, "source", kernel.source, base);
  map.read("entry", kernel.entry);
  if (YAML::Node launches = map.get("launches"); launches.IsDefined()) {
    if (!(launches.IsScalar() && launches.Scalar() == "all")) {
      yaml::for_each_item(
          doc, launches, map.key("launches"),
          [&](const YAML::Node& item, const std::string& item_key) {
            auto launch =
                static_cast<std::size_t>(yaml::decode_int(doc, item, item_key, 0, INT32_MAX));
            if (std::find(kernel.launches.begin(), kernel.launches.end(), launch) !=
                kernel.launches.end()) {
              doc.fail(item, item_key, "launch " + std::to_string(launch) + " is listed twice");
            }
            kernel.launches.push_back(launch);
          });
      if (kernel.launches.empty()) map.fail("launches", "list at least one launch, or write 'all'");
    }
  }
  if (YAML::Node defines = map.get("defines"); defines.IsDefined()) {
    Map define_map(doc, defines, map.key("defines"));
    for (const auto& entry : defines) {
      std::string name = entry.first.Scalar();
      std::string define_key = define_map.key(name);
      if (!is_identifier(name)) doc.fail(entry.first, define_key, "not a valid macro name");
      kernel.defines[name] = yaml::decode_string(doc, define_map.get(name), define_key);
    }
    define_map.finish();
  }
  if (YAML::Node dirs = map.get("include_dirs"); dirs.IsDefined()) {
    yaml::for_each_item(doc, dirs, map.key("include_dirs"),
                        [&](const YAML::Node& item, const std::string& item_key) {
                          std::string dir = yaml::decode_string(doc, item, item_key);
                          if (dir.empty())
                            doc.fail(item, item_key, "an include directory must not be empty");
                          kernel.include_dirs.push_back(resolve(base, dir));
                        });
  }
  map.read("flags", kernel.flags);
  map.read("passes", kernel.passes);
  // [] (what the resolved configuration writes) means: as recorded.
  if (YAML::Node block = map.get("block");
      block.IsDefined() && !(block.IsSequence() && block.size() == 0)) {
    std::vector<std::string> items;
    map.read("block", items);
    if (items.size() != 3)
      map.fail("block", "give the block shape as [x, y, z] (or [] for the recorded one)");
    const bool numbers = std::all_of(items.begin(), items.end(), [](const std::string& item) {
      return !item.empty() && item.find_first_not_of("0123456789") == std::string::npos;
    });
    if (numbers) {
      map.read("block", kernel.block, 1, 1u << 20);
    } else {
      // Sizes named after the source's tunables: checked when a source declares them.
      for (const std::string& item : items) {
        if (item.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_ "
                                   "+-*/()") != std::string::npos)
          map.fail("block", "'" + item +
                                "' is neither a size nor an expression of R3_TUNABLE names "
                                "(integers, names, + - * / and parentheses)");
      }
      kernel.block_expressions = items;
    }
  }
  if (YAML::Node grid = map.get("grid"); grid.IsDefined()) {
    std::string policy;
    map.read("grid", policy);
    if (policy != "derive" && policy != "recorded")
      map.fail("grid", "'" + policy + "' is not one of: derive, recorded");
    kernel.keep_grid = policy == "recorded";
  }
  map.finish();
  return kernel;
}

void parse_source_level(Map& map, SourceLevel& level) {
  map.read("enabled", level.enabled);
  read_share(map, level.share);
  map.read_choices("mutators", level.mutators, kKnownMutators);
  map.finish();
}

void parse_compiler_level(Map& map, CompilerLevel& level) {
  map.read("enabled", level.enabled);
  read_share(map, level.share);
  if (map.has("compilers")) {
    std::vector<std::string> names;
    map.read_choices("compilers", names, kCompilers.names());
    if (names.empty()) map.fail("compilers", "must list at least one compiler");
    level.compilers.clear();
    for (const std::string& name : names) level.compilers.push_back(kCompilers.value(name));
  } else {
    map.get("compilers");
  }
  map.read_choices("flags", level.flags, kKnownCompilerFlags);
  map.read("opt_levels", level.opt_levels, 0, 3);
  map.read("max_registers", level.max_registers, 0, 255);
  if (YAML::Node passes = map.get("passes"); passes.IsDefined()) {
    Map pass_map(map.doc(), passes, map.key("passes"));
    pass_map.read("pool", level.passes.pool);
    pass_map.read("max_length", level.passes.max_length, 1, 64);
    pass_map.read("repeat", level.passes.repeat);
    pass_map.read("baseline", level.passes.baseline);
    if (level.passes.pool.empty()) pass_map.fail("pool", "must list at least one pass");
    pass_map.finish();
  }
  map.finish();
}

void parse_launch_level(Map& map, LaunchLevel& level) {
  map.read("enabled", level.enabled);
  read_share(map, level.share);
  map.read("max_threads", level.max_threads, 1, 1u << 20);
  map.read("block_x", level.block_x, 1, 1u << 20);
  map.read("block_y", level.block_y, 1, 1u << 20);
  map.read("block_z", level.block_z, 1, 1u << 20);
  map.read("grid", level.grid);
  if (level.grid.empty()) map.fail("grid", "must be 'derive' or an expression");
  std::uint64_t smallest =
      std::uint64_t{*std::min_element(level.block_x.begin(), level.block_x.end())} *
      *std::min_element(level.block_y.begin(), level.block_y.end()) *
      *std::min_element(level.block_z.begin(), level.block_z.end());
  if (smallest > level.max_threads) {
    map.fail("max_threads", "no block shape fits: the smallest has " + std::to_string(smallest) +
                                " threads, more than max_threads");
  }
  map.finish();
}

void parse_archive(Map& map, ArchiveConfig& archive) {
  map.read("islands", archive.islands, 1, 1024);
  map.read("migration_interval", archive.migration_interval, 1, 1u << 20);
  map.read_choices("descriptors", archive.descriptors, kKnownDescriptors);
  map.read("bins", archive.bins, 1, 64);
  map.read("exploration", archive.exploration);
  if (archive.exploration < 0 || archive.exploration > 1)
    map.fail("exploration", "must lie in [0, 1]");
  map.read("similarity_threshold", archive.similarity_threshold);
  if (archive.similarity_threshold <= 0 || archive.similarity_threshold > 1) {
    map.fail("similarity_threshold", "must lie in (0, 1]");
  }
  map.finish();
}

void parse_bo(Map& map, BoConfig& bo) {
  read_enum(map, "initial_design", bo.initial_design, kInitialDesigns);
  map.read("initial_samples", bo.initial_samples, 1, 1u << 16);
  read_enum(map, "acquisition", bo.acquisition, kAcquisitions);
  map.read("ucb_beta", bo.ucb_beta);
  if (bo.ucb_beta <= 0) map.fail("ucb_beta", "must be positive");
  read_enum(map, "batch", bo.batch, kBatchStrategies);
  map.finish();
}

template <class Parse, class Section>
void parse_section(Map& parent, std::string_view name, Section& section, Parse parse) {
  if (YAML::Node node = parent.get(name); node.IsDefined()) {
    Map map(parent.doc(), node, parent.key(name));
    parse(map, section);
  }
}

void parse_search(Map& map, SearchConfig& search) {
  map.read("seed", search.seed);
  map.read("batch_size", search.batch_size, 0, 1u << 20);
  if (YAML::Node levels = map.get("levels"); levels.IsDefined()) {
    Map level_map(map.doc(), levels, map.key("levels"));
    parse_section(level_map, "source", search.source, parse_source_level);
    parse_section(level_map, "compiler", search.compiler, parse_compiler_level);
    parse_section(level_map, "launch", search.launch, parse_launch_level);
    parse_section(level_map, "parameters", search.parameters, [](Map& m, ParameterLevel& level) {
      m.read("enabled", level.enabled);
      read_share(m, level.share);
      m.finish();
    });
    level_map.finish();
  }
  parse_section(map, "archive", search.archive, parse_archive);
  parse_section(map, "bo", search.bo, parse_bo);
  map.finish();
  double total = 0;
  if (search.source.enabled) total += search.source.share;
  if (search.compiler.enabled) total += search.compiler.share;
  if (search.launch.enabled) total += search.launch.share;
  if (search.parameters.enabled) total += search.parameters.share;
  if (total <= 0) {
    map.fail("levels", "no search level is enabled with a share above 0: nothing to search");
  }
}

void parse_budget(Map& map, BudgetConfig& budget) {
  map.read("evaluations", budget.evaluations);
  map.read("generations", budget.generations, 1, UINT32_MAX);
  map.read_duration("wall_time", budget.wall_time_s);
  if (budget.wall_time_s <= 0) map.fail("wall_time", "must be positive");
  map.read("llm_cost", budget.llm_cost);
  if (budget.llm_cost < 0) map.fail("llm_cost", "must not be negative (0 means no limit)");
  map.read_duration("job_end_margin", budget.job_end_margin_s);
  if (budget.evaluations == 0) map.fail("evaluations", "must be at least 1");
  map.finish();
}

void parse_simulation(Map& map, SimulationConfig& simulation) {
  map.read_duration("compile", simulation.compile_s);
  map.read_duration("run", simulation.run_s);
  map.read("spread", simulation.spread);
  if (simulation.spread < 0 || simulation.spread > 1) map.fail("spread", "must lie in [0, 1]");
  map.read("failure_rate", simulation.failure_rate);
  if (simulation.failure_rate < 0 || simulation.failure_rate > 1)
    map.fail("failure_rate", "must lie in [0, 1]");
  map.read_duration("kernel_time", simulation.kernel_s);
  if (simulation.kernel_s <= 0) map.fail("kernel_time", "must be positive");
  map.finish();
}

bool looks_like_url(std::string_view text) {
  return text.rfind("http://", 0) == 0 || text.rfind("https://", 0) == 0;
}

void parse_llm(Map& map, LlmConfig& llm, const fs::path& base) {
  map.read("endpoint", llm.endpoint);
  if (!llm.endpoint.empty() && !looks_like_url(llm.endpoint)) {
    map.fail("endpoint", "must be an http:// or https:// URL, e.g. http://127.0.0.1:8000/v1");
  }
  map.read("model", llm.model);
  if (!llm.endpoint.empty() && llm.model.empty()) {
    map.fail("model", "an endpoint needs a model name");
  }
  // The key itself must never appear in tune.yaml (nor, therefore, in the run database):
  // only the name of the variable that holds it. The value is not echoed in the message.
  if (YAML::Node node = map.get("api_key_env"); node.IsDefined()) {
    std::string name = yaml::decode_string(map.doc(), node, map.key("api_key_env"));
    if (!name.empty() && !is_identifier(name)) {
      map.fail("api_key_env",
               "must be the NAME of an environment variable that holds the key (letters, digits, "
               "'_'), not the key itself; remove the key from this file");
    }
    llm.api_key_env = name;
  }
  map.read("temperature", llm.temperature);
  if (llm.temperature < 0 || llm.temperature > 2) map.fail("temperature", "must lie in [0, 2]");
  map.read("max_tokens", llm.max_tokens, 1, 1u << 24);
  map.read("max_answer_bytes", llm.max_answer_bytes);
  if (llm.max_answer_bytes < 1024 || llm.max_answer_bytes > (std::uint64_t{1} << 30))
    map.fail("max_answer_bytes", "must lie between 1024 and 1073741824 bytes");
  map.read_duration("timeout", llm.timeout_s);
  if (llm.timeout_s <= 0) map.fail("timeout", "must be positive");
  map.read("concurrency", llm.concurrency, 1, 1024);
  map.read("max_retries", llm.max_retries, 0, 100);
  map.read("prompt_cost_per_mtok", llm.prompt_cost_per_mtok);
  map.read("completion_cost_per_mtok", llm.completion_cost_per_mtok);
  if (llm.prompt_cost_per_mtok < 0) map.fail("prompt_cost_per_mtok", "must not be negative");
  if (llm.completion_cost_per_mtok < 0)
    map.fail("completion_cost_per_mtok", "must not be negative");
  read_path(map, "templates", llm.templates, base);
  read_path(map, "ca_bundle", llm.ca_bundle, base);
  if (std::error_code ec; !llm.ca_bundle.empty() && !fs::is_regular_file(llm.ca_bundle, ec)) {
    map.fail("ca_bundle", "no such file: " + llm.ca_bundle.string());
  }
  map.finish();
}

Tolerance decode_tolerance(const Document& doc, const YAML::Node& node, const std::string& key) {
  if (node.IsScalar()) {
    if (node.Scalar() == "bitwise" || node.Scalar() == "exact") return Tolerance::exact();
    doc.fail(node, key, "expected 'bitwise' or {rtol: R, atol: A}, got '" + node.Scalar() + "'");
  }
  Map map(doc, node, key);
  Tolerance tolerance = Tolerance::relative(0, 0);
  map.read("rtol", tolerance.rtol);
  map.read("atol", tolerance.atol);
  if (tolerance.rtol < 0) map.fail("rtol", "must not be negative");
  if (tolerance.atol < 0) map.fail("atol", "must not be negative");
  if (!map.has("rtol") && !map.has("atol")) map.fail("rtol", "give rtol, atol or both");
  map.finish();
  return tolerance;
}

void parse_verify(Map& map, VerifyConfig& verify) {
  if (YAML::Node types = map.get("types"); types.IsDefined()) {
    Map type_map(map.doc(), types, map.key("types"));
    for (const auto& entry : types) {
      std::string name = entry.first.Scalar();
      auto type = capture::parse_element_type(name);
      if (!type || *type == capture::ElementType::unknown) {
        std::vector<std::string> names;
        for (auto t : capture::kAllElementTypes) {
          if (t != capture::ElementType::unknown) names.emplace_back(capture::to_string(t));
        }
        yaml::decode_choice(map.doc(), entry.first, type_map.key(name), names);
      }
      Tolerance tolerance = decode_tolerance(map.doc(), type_map.get(name), type_map.key(name));
      if (!tolerance.bitwise && !capture::is_floating_point(*type)) {
        map.doc().fail(entry.first, type_map.key(name),
                       "integer types are compared bitwise; a tolerance applies to f16, bf16, "
                       "f32 and f64 only");
      }
      verify.types[*type] = tolerance;
    }
    type_map.finish();
  }
  if (YAML::Node regions = map.get("regions"); regions.IsDefined()) {
    Map region_map(map.doc(), regions, map.key("regions"));
    for (const auto& entry : regions) {
      std::string name = entry.first.Scalar();
      verify.regions[name] =
          decode_tolerance(map.doc(), region_map.get(name), region_map.key(name));
    }
    region_map.finish();
  }
  map.read("after_timing", verify.after_timing);
  map.finish();
}

void parse_timing(Map& map, TimingConfig& timing) {
  map.read("warmup", timing.warmup, 0, 1u << 20);
  map.read("repeats", timing.repeats, 1, 1u << 20);
  map.read("flush_l2", timing.flush_l2);
  map.read_duration("candidate_timeout", timing.candidate_timeout_s);
  if (timing.candidate_timeout_s <= 0) map.fail("candidate_timeout", "must be positive");
  if (map.has("compile_threads")) {
    std::uint32_t threads = 0;
    map.read("compile_threads", threads, 0, 256);
    timing.compile_threads = threads;
  }
  map.read("confirm_top", timing.confirm_top, 0, 1u << 16);
  map.read("confirm_repeats", timing.confirm_repeats, 1, 1u << 20);
  map.read("confirm_rounds", timing.confirm_rounds, 1, 1000);
  map.finish();
}

void parse_output(Map& map, OutputConfig& output, const fs::path& base) {
  read_path(map, "directory", output.directory, base);
  if (output.directory.empty()) output.directory = base / "r3-results";
  read_path(map, "run_database", output.run_database, output.directory);
  if (output.run_database.empty()) output.run_database = output.directory / "run.h5";
  map.finish();
}

void parse_document(const YAML::Node& root, TuneConfig& config) {
  const fs::path base = config.file.parent_path();
  Document doc(config.file.string(), &config.locations);
  if (!root.IsDefined() || root.IsNull()) {
    doc.fail(YAML::Mark::null_mark(), "",
             "the file is empty; it needs at least 'capture' and 'kernels'");
  }
  Map map(doc, root, "");
  if (!map.has("capture")) map.fail("capture", "missing: the capture file to tune against");
  read_path(map, "capture", config.capture, base);
  if (config.capture.empty()) map.fail("capture", "must name the capture file");
  read_enum(map, "backend", config.backend, kBackends);
  YAML::Node kernels = map.get("kernels");
  if (!kernels.IsDefined()) map.fail("kernels", "missing: list the kernels to tune");
  yaml::for_each_item(doc, kernels, "kernels", [&](const YAML::Node& item, const std::string& key) {
    config.kernels.push_back(parse_kernel(doc, item, key, base));
  });
  if (config.kernels.empty()) map.fail("kernels", "must list at least one kernel");
  parse_section(map, "search", config.search, parse_search);
  parse_section(map, "budget", config.budget, parse_budget);
  parse_section(map, "llm", config.llm, [&](Map& m, LlmConfig& llm) { parse_llm(m, llm, base); });
  parse_section(map, "verify", config.verify, parse_verify);
  parse_section(map, "timing", config.timing, parse_timing);
  parse_section(map, "simulate", config.simulate, parse_simulation);
  if (map.has("simulate") && config.backend != Backend::simulate)
    map.fail("simulate", "cannot take effect: it sets the simulate backend's costs, and backend is '" +
                             std::string(kBackends.name(config.backend)) + "'");
  // Parsed even when absent: the output paths' defaults depend on where tune.yaml is.
  YAML::Node output = map.get("output");
  Map output_map(doc, output.IsDefined() ? output : YAML::Node(YAML::NodeType::Map), "output");
  parse_output(output_map, config.output, base);
  map.finish();
}

}  // namespace

std::string_view to_string(Backend value) { return kBackends.name(value); }
std::string_view to_string(Compiler value) { return kCompilers.name(value); }

std::optional<Compiler> parse_compiler(std::string_view text) {
  for (const auto& [name, value] : kCompilers.table) {
    if (name == text) return value;
  }
  return std::nullopt;
}
std::string_view to_string(Acquisition value) { return kAcquisitions.name(value); }
std::string_view to_string(BatchStrategy value) { return kBatchStrategies.name(value); }
std::string_view to_string(InitialDesign value) { return kInitialDesigns.name(value); }

std::map<capture::ElementType, Tolerance> VerifyConfig::default_type_tolerances() {
  using capture::ElementType;
  std::map<ElementType, Tolerance> types;
  for (ElementType type : capture::kAllElementTypes) types[type] = Tolerance::exact();
  types[ElementType::f16] = Tolerance::relative(1e-3, 1e-5);
  types[ElementType::bf16] = Tolerance::relative(1e-2, 1e-4);
  types[ElementType::f32] = Tolerance::relative(1e-5, 1e-8);
  types[ElementType::f64] = Tolerance::relative(1e-12, 1e-15);
  return types;
}

Tolerance VerifyConfig::for_region(std::string_view name, capture::ElementType type) const {
  if (auto it = regions.find(std::string(name)); it != regions.end()) return it->second;
  if (auto it = types.find(type); it != types.end()) return it->second;
  return Tolerance::exact();
}

capture::ElementType VerifyConfig::type_of(std::string_view name,
                                           capture::ElementType recorded) const {
  if (recorded != capture::ElementType::unknown) return recorded;
  auto it = region_types.find(std::string(name));
  return it == region_types.end() ? recorded : it->second;
}

void TuneConfig::fail(std::string_view key, std::string message) const {
  ErrorContext context;
  context.file = file.string();
  context.key = std::string(key);
  // Point at the key, or else at the nearest enclosing key that was written.
  std::string probe(key);
  while (!probe.empty()) {
    if (auto it = locations.find(probe); it != locations.end()) {
      context.line = it->second.line;
      context.column = it->second.column;
      break;
    }
    std::size_t cut = probe.find_last_of(".[");
    probe.resize(cut == std::string::npos ? 0 : cut);
  }
  throw ConfigError(std::move(message), context);
}

TuneConfig parse_tune_config(std::string_view text, const fs::path& file) {
  TuneConfig config;
  config.file = fs::absolute(file).lexically_normal();
  config.text = std::string(text);
  YAML::Node root;
  try {
    std::vector<YAML::Node> documents = YAML::LoadAll(config.text);
    if (documents.size() > 1) {
      ErrorContext context = in_file(config.file.string());
      context.line = documents[1].Mark().is_null() ? 0 : documents[1].Mark().line + 1;
      throw ConfigError("holds " + std::to_string(documents.size()) +
                            " YAML documents (separated by '---'); a tune file is one document",
                        context);
    }
    if (!documents.empty()) root = documents.front();
  } catch (const YAML::Exception& e) {
    ErrorContext context = in_file(config.file.string());
    if (!e.mark.is_null()) {
      context.line = e.mark.line + 1;
      context.column = e.mark.column + 1;
    }
    throw ConfigError("not valid YAML: " + e.msg, context);
  }
  parse_document(root, config);
  return config;
}

// A tune.yaml is a few KiB; a larger file is a mistake (a capture named as the tune file?).
constexpr std::uint64_t kMaxTuneFileBytes = 1 << 20;

TuneConfig load_tune_config(const fs::path& file) {
  std::string text;
  try {
    text = read_text_file(file, "tune file", kMaxTuneFileBytes);
  } catch (const IoError& e) {
    throw ConfigError(e.message(), in_file(file.string()));
  }
  return parse_tune_config(text, file);
}

std::optional<double> parse_duration(std::string_view text) {
  // Longer than any batch job; also keeps the value exactly printable by format_duration.
  constexpr double kLongest = 1e9;
  if (text.empty()) return std::nullopt;
  double total = 0;
  std::size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
      ++i;
    }
    if (start == i) return std::nullopt;
    double value = 0;
    auto [end, ec] = std::from_chars(text.data() + start, text.data() + i, value);
    if (ec != std::errc() || end != text.data() + i) return std::nullopt;
    std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit.empty()) {
      if (any || i != text.size()) return std::nullopt;  // a bare number stands alone
      scale = 1;
    } else if (unit == "ms") {
      scale = 1e-3;
    } else if (unit == "s") {
      scale = 1;
    } else if (unit == "m" || unit == "min") {
      scale = 60;
    } else if (unit == "h") {
      scale = 3600;
    } else if (unit == "d") {
      scale = 86400;
    } else {
      return std::nullopt;
    }
    total += value * scale;
    any = true;
  }
  if (!std::isfinite(total) || total < 0 || total > kLongest) return std::nullopt;
  return total;
}

std::string format_duration(double seconds) {
  auto whole = static_cast<std::uint64_t>(seconds);
  if (seconds < 1 || static_cast<double>(whole) != seconds) {
    // The shortest text that reads back as the same double.
    char text[64];
    auto [end, ec] = std::to_chars(text, text + sizeof text, seconds, std::chars_format::fixed);
    return std::string(text, end) + "s";
  }
  std::ostringstream out;
  std::uint64_t hours = whole / 3600, minutes = (whole % 3600) / 60, rest = whole % 60;
  if (hours > 0) out << hours << "h";
  if (minutes > 0) out << minutes << "m";
  if (rest > 0) out << rest << "s";
  return out.str();
}

}  // namespace r3::config
