#include "levels.hpp"

#include <algorithm>
#include <charconv>
#include <mutex>
#include <set>

#include "r3/error.hpp"
#include "r3/log.hpp"

namespace r3::tune {

std::optional<int> opt_level_of(std::string_view pipeline) {
  // "default<O3>": 11 characters, the level at [9].
  if (pipeline.size() == 11 && pipeline.starts_with("default<O") && pipeline.ends_with(">") &&
      pipeline[9] >= '0' && pipeline[9] <= '3')
    return pipeline[9] - '0';
  return std::nullopt;
}

namespace {

const char* const kOff = "off";
constexpr int kPtxasDefaultOpt = 3;  // ptxas's own -O level
const char* const kOn = "on";

std::optional<double> as_number(const std::string& text) {
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// How a pool entry is written inside function(...): loop passes in the MemorySSA loop adaptor
// (LICM aborts the compiler without it, although "function(licm)" parses), others as they are.
std::optional<std::string> pipeline_form(const std::string& pass) {
  for (std::string form : {"loop-mssa(" + pass + ")", pass}) {
    if (replay::check_passes("function(" + form + ")").empty()) return form;
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(Level level) {
  switch (level) {
    case Level::compiler:
      return "compiler";
    case Level::launch:
      return "launch";
    case Level::parameters:
      return "parameters";
  }
  return "?";
}

std::optional<Level> parse_level(std::string_view text) {
  for (Level level : kLevels) {
    if (to_string(level) == text) return level;
  }
  return std::nullopt;
}

run::CandidateLevel candidate_level_of(Level level) {
  switch (level) {
    case Level::compiler:
      return run::CandidateLevel::compiler;
    case Level::launch:
      return run::CandidateLevel::launch;
    case Level::parameters:
      return run::CandidateLevel::parameters;
  }
  return run::CandidateLevel::source;
}

std::string_view to_string(CodePath path) {
  switch (path) {
    case CodePath::host:
      return "host";
    case CodePath::recorded:
      return "recorded";
    case CodePath::nvrtc:
      return "nvrtc";
  }
  return "?";
}

// Clang's relaxations: each is off by default and turned on by its flag.
std::optional<Switch> host_switch(std::string_view search_flag) {
  if (search_flag == "fast_math") return Switch{"fast_math", kOff, kOn, "-ffast-math"};
  if (search_flag == "ftz")
    return Switch{"ftz", kOff, kOn, "-fdenormal-fp-math=preserve-sign"};
  if (search_flag == "fmad") return Switch{"fmad", kOff, kOn, "-ffp-contract=fast"};
  return std::nullopt;
}

// NVRTC's switches, named and valued as NVRTC spells them: its default first.
std::optional<Switch> nvrtc_switch(std::string_view search_flag) {
  if (search_flag == "fast_math") return Switch{"use_fast_math", kOff, kOn, "--use_fast_math"};
  if (search_flag == "ftz") return Switch{"ftz", "false", "true", "--ftz=true"};
  if (search_flag == "prec_div") return Switch{"prec_div", "true", "false", "--prec-div=false"};
  if (search_flag == "prec_sqrt")
    return Switch{"prec_sqrt", "true", "false", "--prec-sqrt=false"};
  if (search_flag == "fmad") return Switch{"fmad", "true", "false", "--fmad=false"};
  if (search_flag == "extra_device_vectorization")
    return Switch{"extra_device_vectorization", kOff, kOn, "--extra-device-vectorization"};
  return std::nullopt;
}

LevelBuilder::LevelBuilder(const config::TuneConfig& config, config::Backend backend)
    : config_(config), backend_(backend) {
  static std::once_flag warned;
  std::vector<std::string> dropped;
  for (const std::string& pass : config.search.compiler.passes.pool) {
    if (auto form = pipeline_form(pass))
      passes_.push_back(*form);
    else
      dropped.push_back(pass);
  }
  for (const std::string& flag : config.search.compiler.flags) {
    if (switch_of(flag)) flags_.push_back(flag);
  }
  if (!dropped.empty()) {
    std::call_once(warned, [&] {
      std::string list;
      for (const auto& d : dropped) list += (list.empty() ? "" : ", ") + d;
      log::warning("search.compiler.passes.pool: left out what this LLVM cannot run: ", list);
    });
  }
}

bool LevelBuilder::enabled(Level level) const {
  switch (level) {
    case Level::compiler:
      return config_.search.compiler.enabled;
    case Level::launch:
      // A host kernel has no launch shape.
      return config_.search.launch.enabled && backend_ == config::Backend::cuda;
    case Level::parameters:
      return config_.search.parameters.enabled;
  }
  return false;
}

double LevelBuilder::share(Level level) const {
  switch (level) {
    case Level::compiler:
      return config_.search.compiler.share;
    case Level::launch:
      return config_.search.launch.share;
    case Level::parameters:
      return config_.search.parameters.share;
  }
  return 0;
}

std::optional<Switch> LevelBuilder::switch_of(std::string_view search_flag) const {
  return backend_ == config::Backend::host ? host_switch(search_flag) : nvrtc_switch(search_flag);
}

int LevelBuilder::baseline_opt() const {
  return opt_level_of(config_.search.compiler.passes.baseline).value_or(kPtxasDefaultOpt);
}

std::optional<bo::Configuration> LevelBuilder::recorded_jit(const LevelSpace& level) const {
  const bo::Space& space = level.space;
  bo::Configuration jit = level.defaults;
  for (std::size_t i = 0; i < space.parameters().size(); ++i) {
    const bo::Parameter& p = space.parameters()[i];
    if (p.name == "code") jit.values[i] = {1};  // ptx
    if (p.name == "ptxas_opt") {
      auto at = std::find(p.numbers.begin(), p.numbers.end(), double(kPtxasDefaultOpt));
      jit.values[i] = {static_cast<int>(at == p.numbers.end() ? p.numbers.size() - 1
                                                              : at - p.numbers.begin())};
    }
    if (p.name == "max_registers" || p.name == "cache_mode") jit.values[i] = {0};
  }
  if (!space.valid(jit)) return std::nullopt;
  return jit;
}

// The compiler level's space for one code path: only options that change the code on it.
//   host      opt (the pipeline's level), Clang's switches, an LLVM pass sequence
//   nvrtc     ptxas_opt, NVRTC's switches, max_registers, cache_mode (ptxas -dlcm)
//   recorded  code: the recorded cubin as it is, or the recorded PTX through the JIT, with
//             ptxas_opt, max_registers and cache_mode for the JIT only; nothing without PTX
// Its default point changes nothing: the recorded cubin, or the compiler's own defaults.
std::optional<LevelSpace> LevelBuilder::build_compiler(CodePath path, bool has_ptx) const {
  const config::CompilerLevel& c = config_.search.compiler;
  if (path == CodePath::recorded && !has_ptx) return std::nullopt;
  std::vector<bo::Parameter> parameters;
  bo::Configuration defaults;
  auto add = [&](bo::Parameter p, std::vector<int> default_value) {
    parameters.push_back(std::move(p));
    defaults.values.push_back(std::move(default_value));
  };
  const char* jit_only = "code == \"ptx\"";
  auto when_jit = [&](bo::Parameter p) {
    // On the recorded path these act only on the JIT, so they exist only with code=ptx.
    if (path == CodePath::recorded) p.when(jit_only);
    return p;
  };
  if (path == CodePath::recorded) add(bo::Parameter::categorical("code", {"cubin", "ptx"}), {0});
  std::vector<double> opts(c.opt_levels.begin(), c.opt_levels.end());
  const int baseline = baseline_opt();
  if (std::find(opts.begin(), opts.end(), double(baseline)) == opts.end()) opts.push_back(baseline);
  std::sort(opts.begin(), opts.end());
  opts.erase(std::unique(opts.begin(), opts.end()), opts.end());
  const int at = static_cast<int>(std::find(opts.begin(), opts.end(), double(baseline)) -
                                  opts.begin());
  const bool recorded = path == CodePath::recorded;
  if (opts.size() > 1 || recorded)
    add(when_jit(bo::Parameter::ordinal(path == CodePath::host ? "opt" : "ptxas_opt", opts)),
        recorded ? std::vector<int>{} : std::vector<int>{at});
  if (path != CodePath::recorded) {
    for (const std::string& flag : flags_) {
      // (The host path is the host backend's, the others the CUDA backend's.)
      std::optional<Switch> s = switch_of(flag);
      if (s) add(bo::Parameter::categorical(s->name, {s->default_label, s->other_label}), {0});
    }
  }
  if (path == CodePath::host) {
    if (!passes_.empty() && c.passes.max_length > 0)
      add(bo::Parameter::sequence("passes", passes_, c.passes.max_length, c.passes.repeat), {});
  } else {
    std::vector<double> limits(c.max_registers.begin(), c.max_registers.end());
    limits.push_back(0);  // no limit: the default
    std::sort(limits.begin(), limits.end());
    limits.erase(std::unique(limits.begin(), limits.end()), limits.end());
    if (limits.size() > 1)
      add(when_jit(bo::Parameter::ordinal("max_registers", limits)),
          recorded ? std::vector<int>{} : std::vector<int>{0});
    add(when_jit(bo::Parameter::categorical("cache_mode", {"default", "ca", "cg"})),
        recorded ? std::vector<int>{} : std::vector<int>{0});
  }
  if (parameters.empty()) return std::nullopt;
  bo::Space space(std::move(parameters));
  if (space.log10_size() <= 0) return std::nullopt;
  return LevelSpace{std::move(space), std::move(defaults)};
}

BlockChoices kokkos_team_choices(const capture::Dim3& block, bool auto_team_size,
                                 bool auto_vector_length) {
  BlockChoices choices{{block.x}, {block.y}, {1}};
  if (auto_vector_length) choices.x = {1, 2, 4, 8, 16, 32};
  if (auto_team_size) {
    choices.y.clear();
    for (std::uint32_t team = 1; team <= 1024; team *= 2) choices.y.push_back(team);
  }
  return choices;
}

std::optional<LevelSpace> LevelBuilder::build(Level level,
                                              const std::vector<evolve::Tunable>& tunables,
                                              std::optional<capture::Dim3> original_block,
                                              CodePath path, bool has_ptx,
                                              const BlockChoices* blocks) const {
  if (!enabled(level)) return std::nullopt;
  std::vector<bo::Parameter> parameters;
  bo::Configuration defaults;
  std::vector<std::string> constraints;
  auto add = [&](bo::Parameter p, std::vector<int> default_value) {
    parameters.push_back(std::move(p));
    defaults.values.push_back(std::move(default_value));
  };
  if (level == Level::compiler) {
    return build_compiler(path, has_ptx);
  } else if (level == Level::launch) {
    const config::LaunchLevel& l = config_.search.launch;
    // Each dimension's values, with the original's among them; its index is the default.
    auto dimension = [&](const char* name, std::vector<std::uint32_t> values,
                         std::optional<std::uint32_t> original) {
      if (original) values.push_back(*original);
      std::vector<double> out(values.begin(), values.end());
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
      const int at =
          original
              ? static_cast<int>(std::find(out.begin(), out.end(), double(*original)) - out.begin())
              : 0;
      add(bo::Parameter::ordinal(name, out), {at});
    };
    const auto& b = original_block;
    dimension("bx", blocks ? blocks->x : l.block_x, b ? std::optional(b->x) : std::nullopt);
    dimension("by", blocks ? blocks->y : l.block_y, b ? std::optional(b->y) : std::nullopt);
    dimension("bz", blocks ? blocks->z : l.block_z, b ? std::optional(b->z) : std::nullopt);
    constraints.push_back("bx * by * bz <= " + std::to_string(l.max_threads));
  } else {
    for (const evolve::Tunable& t : tunables) {
      std::vector<std::string> values = t.values;
      if (std::find(values.begin(), values.end(), t.default_value) == values.end())
        values.push_back(t.default_value);
      bool numeric = std::all_of(values.begin(), values.end(),
                                 [](const std::string& v) { return as_number(v).has_value(); });
      if (numeric) {
        std::vector<double> numbers;
        for (const auto& v : values) numbers.push_back(*as_number(v));
        std::sort(numbers.begin(), numbers.end());
        numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
        double d = *as_number(t.default_value);
        int index =
            static_cast<int>(std::find(numbers.begin(), numbers.end(), d) - numbers.begin());
        add(bo::Parameter::ordinal(t.name, numbers), {index});
      } else {
        std::vector<std::string> distinct;
        for (const auto& v : values) {
          if (std::find(distinct.begin(), distinct.end(), v) == distinct.end())
            distinct.push_back(v);
        }
        int index = static_cast<int>(std::find(distinct.begin(), distinct.end(), t.default_value) -
                                     distinct.begin());
        add(bo::Parameter::categorical(t.name, distinct), {index});
      }
    }
  }
  if (parameters.empty()) return std::nullopt;
  bo::Space space(std::move(parameters), constraints);
  // A space of one point has nothing to search.
  if (space.log10_size() <= 0) return std::nullopt;
  return LevelSpace{std::move(space), std::move(defaults)};
}

void LevelBuilder::apply(Level level, const LevelSpace& level_space,
                         const bo::Configuration& configuration, replay::Variant& variant) const {
  const bo::Space& space = level_space.space;
  const auto& parameters = space.parameters();
  auto label = [&](std::size_t i) {
    return parameters[i].labels.at(static_cast<std::size_t>(configuration.values[i].at(0)));
  };
  if (level == Level::compiler) {
    std::string sequence;
    std::optional<int> opt;
    bool jit = true;  // the recorded path with code=cubin compiles nothing
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      const bo::Parameter& p = parameters[i];
      if (configuration.values[i].empty()) continue;  // inactive
      if (p.name == "opt" || p.name == "ptxas_opt") {
        opt = std::stoi(label(i));
      } else if (p.name == "code") {
        jit = label(i) == "ptx";
      } else if (p.name == "max_registers") {
        if (label(i) != "0") variant.flags.push_back("--maxrregcount=" + label(i));
      } else if (p.name == "cache_mode") {
        if (label(i) != "default") variant.flags.push_back("-dlcm=" + label(i));
      } else if (p.kind == bo::Kind::sequence) {
        for (int item : configuration.values[i])
          sequence += (sequence.empty() ? "" : ",") + p.pool.at(static_cast<std::size_t>(item));
      } else {
        for (const std::string& flag : flags_) {
          std::optional<Switch> s = switch_of(flag);
          if (s && s->name == p.name && label(i) == s->other_label) variant.flags.push_back(s->flag);
        }
      }
    }
    const int baseline = baseline_opt();
    if (backend_ == config::Backend::host) {
      std::string pipeline = "default<O" + std::to_string(opt.value_or(baseline)) + ">";
      if (!sequence.empty()) pipeline += ",function(" + sequence + ")";
      variant.passes = pipeline;
    } else if (parameters.front().name == "code") {
      // The recorded PTX goes through the JIT only when an -O level is given.
      if (jit) variant.flags.push_back("-O" + std::to_string(opt.value_or(baseline)));
    } else if (opt && *opt != baseline) {
      variant.flags.push_back("-O" + std::to_string(*opt));  // ptxas, after NVRTC
    }
  } else if (level == Level::launch) {
    // At its default point every launch keeps the block it was recorded with (or tune.yaml's).
    if (configuration == level_space.defaults) return;
    variant.block = capture::Dim3{static_cast<std::uint32_t>(std::stoul(label(0))),
                                  static_cast<std::uint32_t>(std::stoul(label(1))),
                                  static_cast<std::uint32_t>(std::stoul(label(2)))};
  } else {
    for (std::size_t i = 0; i < parameters.size(); ++i)
      variant.defines[parameters[i].name] = label(i);
  }
}

}  // namespace r3::tune
