// The resolved tune.yaml: the same keys as the input, every default filled in.
#include <yaml-cpp/yaml.h>

#include "r3/tune_config.hpp"

namespace r3::config {
namespace {

template <class T>
void pair(YAML::Emitter& out, const char* key, const T& value) {
  out << YAML::Key << key << YAML::Value << value;
}

void path(YAML::Emitter& out, const char* key, const std::filesystem::path& value) {
  pair(out, key, value.string());
}

void duration(YAML::Emitter& out, const char* key, double seconds) {
  pair(out, key, format_duration(seconds));
}

template <class T>
void flow_list(YAML::Emitter& out, const char* key, const std::vector<T>& values) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const T& value : values) out << value;
  out << YAML::EndSeq;
}

void tolerance(YAML::Emitter& out, const Tolerance& t) {
  if (t.bitwise) {
    out << "bitwise";
    return;
  }
  out << YAML::Flow << YAML::BeginMap;
  pair(out, "rtol", t.rtol);
  pair(out, "atol", t.atol);
  out << YAML::EndMap;
}

void emit_kernel(YAML::Emitter& out, const KernelSelection& kernel) {
  out << YAML::BeginMap;
  pair(out, "name", kernel.name);
  path(out, "source", kernel.source);
  pair(out, "entry", kernel.entry);
  if (kernel.launches.empty()) {
    pair(out, "launches", "all");
  } else {
    flow_list(out, "launches", kernel.launches);
  }
  out << YAML::Key << "defines" << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (const auto& [name, value] : kernel.defines) pair(out, name.c_str(), value);
  out << YAML::EndMap;
  std::vector<std::string> dirs;
  for (const auto& dir : kernel.include_dirs) dirs.push_back(dir.string());
  flow_list(out, "include_dirs", dirs);
  flow_list(out, "flags", kernel.flags);
  pair(out, "passes", kernel.passes);
  if (kernel.block_expressions.empty())
    flow_list(out, "block", kernel.block);
  else
    flow_list(out, "block", kernel.block_expressions);
  out << YAML::Key << "grid" << YAML::Value << (kernel.keep_grid ? "recorded" : "derive");
  out << YAML::EndMap;
}

void emit_search(YAML::Emitter& out, const SearchConfig& search) {
  out << YAML::Key << "search" << YAML::Value << YAML::BeginMap;
  pair(out, "seed", search.seed);
  pair(out, "batch_size", search.batch_size);
  out << YAML::Key << "levels" << YAML::Value << YAML::BeginMap;

  out << YAML::Key << "source" << YAML::Value << YAML::BeginMap;
  pair(out, "enabled", search.source.enabled);
  pair(out, "share", search.source.share);
  flow_list(out, "mutators", search.source.mutators);
  out << YAML::EndMap;

  const CompilerLevel& compiler = search.compiler;
  out << YAML::Key << "compiler" << YAML::Value << YAML::BeginMap;
  pair(out, "enabled", compiler.enabled);
  pair(out, "share", compiler.share);
  std::vector<std::string> compilers;
  for (Compiler c : compiler.compilers) compilers.emplace_back(to_string(c));
  flow_list(out, "compilers", compilers);
  flow_list(out, "flags", compiler.flags);
  flow_list(out, "opt_levels", compiler.opt_levels);
  flow_list(out, "max_registers", compiler.max_registers);
  out << YAML::Key << "passes" << YAML::Value << YAML::BeginMap;
  flow_list(out, "pool", compiler.passes.pool);
  pair(out, "max_length", compiler.passes.max_length);
  pair(out, "repeat", compiler.passes.repeat);
  pair(out, "baseline", compiler.passes.baseline);
  out << YAML::EndMap << YAML::EndMap;

  const LaunchLevel& launch = search.launch;
  out << YAML::Key << "launch" << YAML::Value << YAML::BeginMap;
  pair(out, "enabled", launch.enabled);
  pair(out, "share", launch.share);
  flow_list(out, "block_x", launch.block_x);
  flow_list(out, "block_y", launch.block_y);
  flow_list(out, "block_z", launch.block_z);
  pair(out, "max_threads", launch.max_threads);
  pair(out, "grid", launch.grid);
  out << YAML::EndMap;

  out << YAML::Key << "parameters" << YAML::Value << YAML::BeginMap;
  pair(out, "enabled", search.parameters.enabled);
  pair(out, "share", search.parameters.share);
  out << YAML::EndMap;
  out << YAML::EndMap;  // levels

  const ArchiveConfig& archive = search.archive;
  out << YAML::Key << "archive" << YAML::Value << YAML::BeginMap;
  pair(out, "islands", archive.islands);
  pair(out, "migration_interval", archive.migration_interval);
  flow_list(out, "descriptors", archive.descriptors);
  pair(out, "bins", archive.bins);
  pair(out, "exploration", archive.exploration);
  pair(out, "similarity_threshold", archive.similarity_threshold);
  out << YAML::EndMap;

  const BoConfig& bo = search.bo;
  out << YAML::Key << "bo" << YAML::Value << YAML::BeginMap;
  pair(out, "initial_design", std::string(to_string(bo.initial_design)));
  pair(out, "initial_samples", bo.initial_samples);
  pair(out, "acquisition", std::string(to_string(bo.acquisition)));
  pair(out, "ucb_beta", bo.ucb_beta);
  pair(out, "batch", std::string(to_string(bo.batch)));
  out << YAML::EndMap;
  out << YAML::EndMap;  // search
}

}  // namespace

std::string to_yaml(const TuneConfig& config) {
  YAML::Emitter out;
  // 15 significant digits reproduce every decimal a user can write, without binary noise.
  out.SetDoublePrecision(15);
  out << YAML::BeginMap;
  path(out, "capture", config.capture);
  pair(out, "backend", std::string(to_string(config.backend)));
  out << YAML::Key << "kernels" << YAML::Value << YAML::BeginSeq;
  for (const KernelSelection& kernel : config.kernels) emit_kernel(out, kernel);
  out << YAML::EndSeq;
  emit_search(out, config.search);

  const BudgetConfig& budget = config.budget;
  out << YAML::Key << "budget" << YAML::Value << YAML::BeginMap;
  pair(out, "evaluations", budget.evaluations);
  pair(out, "generations", budget.generations);
  duration(out, "wall_time", budget.wall_time_s);
  pair(out, "llm_cost", budget.llm_cost);
  duration(out, "job_end_margin", budget.job_end_margin_s);
  out << YAML::EndMap;

  const SimulationConfig& simulate = config.simulate;
  if (config.backend == Backend::simulate) {
    out << YAML::Key << "simulate" << YAML::Value << YAML::BeginMap;
    duration(out, "compile", simulate.compile_s);
    duration(out, "run", simulate.run_s);
    pair(out, "spread", simulate.spread);
    pair(out, "failure_rate", simulate.failure_rate);
    duration(out, "kernel_time", simulate.kernel_s);
    out << YAML::EndMap;
  }

  const LlmConfig& llm = config.llm;
  out << YAML::Key << "llm" << YAML::Value << YAML::BeginMap;
  pair(out, "endpoint", llm.endpoint);
  pair(out, "model", llm.model);
  pair(out, "api_key_env", llm.api_key_env);
  pair(out, "temperature", llm.temperature);
  pair(out, "max_tokens", llm.max_tokens);
  pair(out, "max_answer_bytes", llm.max_answer_bytes);
  duration(out, "timeout", llm.timeout_s);
  pair(out, "concurrency", llm.concurrency);
  pair(out, "max_retries", llm.max_retries);
  pair(out, "prompt_cost_per_mtok", llm.prompt_cost_per_mtok);
  pair(out, "completion_cost_per_mtok", llm.completion_cost_per_mtok);
  path(out, "templates", llm.templates);
  path(out, "ca_bundle", llm.ca_bundle);
  out << YAML::EndMap;

  out << YAML::Key << "verify" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "types" << YAML::Value << YAML::BeginMap;
  for (const auto& [type, t] : config.verify.types) {
    if (type == capture::ElementType::unknown) continue;
    out << YAML::Key << std::string(capture::to_string(type)) << YAML::Value;
    tolerance(out, t);
  }
  out << YAML::EndMap;
  out << YAML::Key << "regions" << YAML::Value;
  if (config.verify.regions.empty()) out << YAML::Flow;
  out << YAML::BeginMap;
  for (const auto& [name, t] : config.verify.regions) {
    out << YAML::Key << name << YAML::Value;
    tolerance(out, t);
  }
  out << YAML::EndMap;
  pair(out, "after_timing", config.verify.after_timing);
  out << YAML::EndMap;

  const TimingConfig& timing = config.timing;
  out << YAML::Key << "timing" << YAML::Value << YAML::BeginMap;
  pair(out, "warmup", timing.warmup);
  pair(out, "repeats", timing.repeats);
  pair(out, "flush_l2", timing.flush_l2);
  duration(out, "candidate_timeout", timing.candidate_timeout_s);
  if (timing.compile_threads) pair(out, "compile_threads", *timing.compile_threads);
  pair(out, "confirm_top", timing.confirm_top);
  pair(out, "confirm_repeats", timing.confirm_repeats);
  pair(out, "confirm_rounds", timing.confirm_rounds);
  out << YAML::EndMap;

  out << YAML::Key << "output" << YAML::Value << YAML::BeginMap;
  path(out, "directory", config.output.directory);
  path(out, "run_database", config.output.run_database);
  out << YAML::EndMap;

  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace r3::config
