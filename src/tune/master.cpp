#include "master.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <limits>
#include <sstream>

#include "clock.hpp"
#include "levels.hpp"
#include "r3/error.hpp"
#include "r3/evolve/response.hpp"
#include "r3/files.hpp"
#include "r3/log.hpp"
#include "r3/replay/extract_command.hpp"
#include "r3/replay/kokkos_policy.hpp"
#include "r3/replay/simulation.hpp"
#include "r3/version.hpp"

namespace r3::tune {
namespace {

// Pipelines LLVM cannot parse, and kernels' pipelines the search would replace, are errors:
// neither may be silently dropped.
void check_pass_pipelines(const config::TuneConfig& c, config::Backend backend) {
  const auto& compiler = c.search.compiler;
  // The compiler level takes its -O levels from the baseline (levels.cpp); with the host backend
  // it builds each candidate's whole pipeline itself.
  const bool level_on = compiler.enabled && compiler.share > 0;
  const bool searched = level_on && backend == config::Backend::host;
  if (std::string why = replay::check_passes(compiler.passes.baseline); !why.empty())
    c.fail("search.levels.compiler.passes.baseline", "'" + compiler.passes.baseline + "' is not a pass pipeline: " + why);
  if (level_on && !opt_level_of(compiler.passes.baseline))
    c.fail("search.levels.compiler.passes.baseline",
           "'" + compiler.passes.baseline +
               "': while the compiler level searches, the baseline must be default<O0> to "
               "default<O3> (the level varies the -O level and appends passes to it)");
  for (std::size_t i = 0; i < c.kernels.size(); ++i) {
    const std::string& passes = c.kernels[i].passes;
    if (passes.empty()) continue;
    const std::string key = "kernels[" + std::to_string(i) + "].passes";
    if (std::string why = replay::check_passes(passes); !why.empty())
      c.fail(key, "'" + passes + "' is not a pass pipeline: " + why);
    if (searched)
      c.fail(key, "cannot take effect: the compiler level (search.levels.compiler) chooses every "
                  "candidate's pipeline; set search.levels.compiler.enabled: false to compile with "
                  "this one, or start the search from it with search.levels.compiler.passes.baseline");
  }
}

}  // namespace

// The first line of a compiler's or verifier's message that names an error, else its first line.
std::string first_diagnostic(const std::string& message) {
  std::istringstream lines(message);
  std::string line, first;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (first.empty()) first = line;
    if (line.find("error") != std::string::npos) return line;
  }
  return first.empty() ? std::string("(no message)") : first;
}

namespace {

// An application's own file rather than a kernel file: host code around the kernels (launches,
// main). Such a file is not compiled as it is: the kernel's device-only unit is cut from it.
bool is_application_file(const std::string& text) {
  return text.find("<<<") != std::string::npos || text.find(" main(") != std::string::npos;
}

// kernels[index] as its source file knows it: read with Clang and the compile settings tune.yaml
// gives it (r3 extract shows the same unit).
std::string name_in_source(const config::KernelSelection& s, const capture::Kernel& kernel) {
  return !s.entry.empty()                 ? s.entry
         : kernel.demangled_name.empty() ? kernel.name
                                         : capture::instance_name(kernel.demangled_name);
}
replay::ExtractedSource read_with_clang(const config::TuneConfig& c, std::size_t index,
                                        const capture::Kernel& kernel) {
  const config::KernelSelection& s = c.kernels[index];
  return replay::extract_source(s.source, name_in_source(s, kernel), s.defines, s.include_dirs,
                                reading_flags(s.flags));
}

// The device-only unit of kernels[index], cut from its source file, an application's file.
std::string extracted_unit(const config::TuneConfig& c, std::size_t index,
                           const capture::Kernel& kernel, const replay::ExtractedSource& unit) {
  const config::KernelSelection& s = c.kernels[index];
  const std::string name = name_in_source(s, kernel);
  const std::string key = "kernels[" + std::to_string(index) + "].source";
  if (!unit.ok)
    c.fail(key, "cannot cut kernel '" + name + "' from " + s.source.string() + ": " +
                    first_diagnostic(unit.diagnostics));
  log::info(key, ": the device-only unit of '", name, "' cut from ", s.source.filename().string(),
            " (", unit.pieces, " piece(s); 'r3 extract ", s.source.string(), " -k ", name,
            "' shows it)");
  return unit.text;
}

// Regions reached by a pointer to a struct of one floating type, which the capture cannot type:
// compared per component with that type's tolerance, as float2 is.
std::map<std::string, capture::ElementType> struct_region_types(
    const replay::ExtractedSource& unit, const capture::Kernel& kernel) {
  std::map<std::string, capture::ElementType> types;
  if (!unit.ok || unit.parameter_struct_types.size() != kernel.params.size()) return types;
  for (std::size_t i = 0; i < kernel.params.size(); ++i) {
    if (auto type = capture::parse_element_type(unit.parameter_struct_types[i]))
      types["arg" + std::to_string(i)] = *type;
  }
  return types;
}

// `choices`, with each dimension whose variable (x, y, z: `names`) the application declared
// candidates for (kokkos_choices, recorded by the connector) limited to those: a value outside
// them would be refused when r3 apply hands it over.
BlockChoices declared_choices(const capture::Kernel& kernel, const KernelTarget& k,
                              BlockChoices choices, const std::array<const char*, 3>& names) {
  std::vector<std::uint32_t>* dims[3] = {&choices.x, &choices.y, &choices.z};
  for (std::size_t d = 0; d < 3; ++d) {
    auto declared = kernel.kokkos_choices.find(names[d]);
    if (*names[d] == 0 || declared == kernel.kokkos_choices.end()) continue;
    std::vector<std::uint32_t> values;
    for (std::int64_t v : declared->second)
      if (v >= 1 && v <= 1024) values.push_back(static_cast<std::uint32_t>(v));
    if (values.empty()) continue;
    *dims[d] = std::move(values);
    log::info("kernel ", k.name, ": ", "xyz"[d], " takes the values the application declared for ",
              k.kokkos_label, "_", names[d], " (", declared->second.size(), ")");
  }
  return choices;
}

// What of a Kokkos kernel's launch Kokkos' tuning interface can be given and replay can launch
// as Kokkos would (r3/replay/kokkos_policy.hpp); nullopt, with a warning saying why, when nothing.
std::optional<BlockChoices> kokkos_blocks(const config::TuneConfig& config,
                                          const capture::Kernel& kernel, const KernelTarget& k) {
  const capture::Launch& first = kernel.launches.at(k.launches.empty() ? 0 : k.launches.front());
  const std::string what = "kernel " + k.name + " is the Kokkos kernel '" + k.kokkos_label + "', ";
  const std::string not_compiler =
      "; not its compiler options, which would need the application rebuilt";
  std::string why =
      "not an MDRange or TeamPolicy kernel whose launch replay can change as Kokkos would";
  if (replay::find_mdrange_tiling(first.args, first.block, first.grid) &&
      !kernel.kokkos_choices.contains("tile_size_0")) {
    why =
        "an MDRange kernel for which the application declares no tile variable "
        "('" +
        k.kokkos_label +
        "_tile_size_0', ...): its tile would reach it only through "
        "Kokkos' own MDRange tuner (--kokkos-tune-internals), which r3 apply does not answer "
        "(and which Kokkos 4.6 applies wrongly to reductions: docs/kokkos.md)";
  } else if (replay::find_mdrange_tiling(first.args, first.block, first.grid)) {
    log::info(what,
              "an MDRange kernel: its tile is searched (its block, the policy in its closure "
              "rewritten as Kokkos would), which r3 apply gives the application through Kokkos' "
              "tuning interface",
              not_compiler);
    const config::LaunchLevel& l = config.search.launch;
    return declared_choices(kernel, k, BlockChoices{l.block_x, l.block_y, l.block_z},
                            {"tile_size_0", "tile_size_1", "tile_size_2"});
  }
  std::optional<replay::TeamShape> team;
  if (replay::is_team_parallel_for(kernel.demangled_name))
    team = replay::find_team_shape(first.args, first.block, first.grid, first.shared_memory_bytes);
  if (team && team->uses_scratch) {
    why =
        "a TeamPolicy kernel whose teams use scratch memory, which a new team size would "
        "share out anew";
  } else if (team && (team->auto_team_size || team->auto_vector_length)) {
    log::info(what, "a TeamPolicy kernel: its ",
              team->auto_team_size && team->auto_vector_length
                  ? "team size and vector length are"
                  : (team->auto_team_size ? "team size is" : "vector length is"),
              " searched (block (vector length, team size, 1), the closure rewritten as Kokkos "
              "would), which r3 apply gives the application through Kokkos' team-size tuner "
              "(--kokkos-tune-internals)",
              not_compiler);
    return declared_choices(
        kernel, k, kokkos_team_choices(first.block, team->auto_team_size, team->auto_vector_length),
        {"vector_length", "team_size", ""});
  } else if (team) {
    why = team->policy_found
              ? "a TeamPolicy kernel whose team size and vector length the application sets "
                "(not Kokkos::AUTO), so Kokkos asks a tool for neither"
              : "a TeamPolicy kernel whose policy is not where Kokkos 4 puts it, so what Kokkos "
                "leaves to a tool is not known";
  }
  log::warning(what, why,
               ": a new block would be a launch the application cannot make, and compiler options "
               "would need it rebuilt; only its original is measured");
  return std::nullopt;
}

}  // namespace

std::unique_ptr<Master> set_up_master(const JobOptions& options, int world_size, bool dry_run) {
  auto m = std::make_unique<Master>();
  m->config = config::load_tune_config(options.tune_file);
  const config::TuneConfig& c = m->config;
  try {
    m->capture = std::make_unique<capture::CaptureReader>(capture::CaptureReader::open(c.capture));
  } catch (const Error& e) {
    c.fail("capture", e.what());
  }
  m->backend = config::check_against_capture(c, *m->capture);
  std::vector<KernelTarget> kernels;
  for (std::size_t i = 0; i < c.kernels.size(); ++i) {
    const config::KernelSelection& s = c.kernels[i];
    KernelTarget k;
    k.capture_index = m->capture->find_kernel(s.name).value();  // checked above
    const capture::Kernel& kernel = m->capture->kernels().at(k.capture_index);
    k.name = kernel.name;
    k.launches = s.launches;
    if (!s.source.empty()) {
      k.source = read_text_file(s.source, "kernels[" + std::to_string(i) + "].source");
      k.source_name = s.source.filename().string();
      k.source_path = std::filesystem::absolute(s.source).lexically_normal().string();
      if (m->backend == config::Backend::cuda) {
        const replay::ExtractedSource unit = read_with_clang(c, i, kernel);
        if (is_application_file(k.source)) k.source = extracted_unit(c, i, kernel, unit);
        k.region_types = struct_region_types(unit, kernel);
        for (const auto& [region, type] : k.region_types)
          log::info("kernels[", i, "]: region '", region, "' holds a struct of ",
                    capture::to_string(type), " only (from ", k.source_name,
                    "): compared per component");
      }
    }
    k.base.entry = s.entry;
    k.base.defines = s.defines;
    k.base.include_dirs = s.include_dirs;
    k.base.flags = s.flags;
    k.base.passes = s.passes;
    if (!s.block.empty()) k.base.block = capture::Dim3{s.block[0], s.block[1], s.block[2]};
    k.base.keep_grid = s.keep_grid;
    if (!s.block_expressions.empty()) {
      if (s.source.empty())
        c.fail("kernels[" + std::to_string(i) + "].block",
               "the block names tunables, which only a source: declares");
      k.block_expressions =
          evolve::BlockExpressions{s.block_expressions[0], s.block_expressions[1],
                                   s.block_expressions[2]};
    }
    k.original_block = k.base.block;
    if (!k.original_block && !kernel.launches.empty())
      k.original_block = kernel.launches.at(k.launches.empty() ? 0 : k.launches.front()).block;
    k.base.compiler =
        m->backend == config::Backend::cuda ? replay::Compiler::nvrtc : replay::Compiler::clang;
    k.has_recorded_cubin = kernel.images.contains(std::string(capture::kImageCubin));
    k.has_recorded_ptx = kernel.images.contains(std::string(capture::kImagePtx));
    k.has_recorded_source = kernel.images.contains(std::string(capture::kImageSource));
    k.kokkos_label = kernel.kokkos_label;
    if (!k.kokkos_label.empty()) k.kokkos_blocks = kokkos_blocks(m->config, kernel, k);
    // The kernel as its source names it: "MatrixMul" for _Z9MatrixMulILi32EEvPfS_.
    std::string base = kernel.demangled_name.empty() ? kernel.name
                                                     : capture::instance_name(kernel.demangled_name);
    k.template_arguments = capture::template_arguments(base);
    base = base.substr(0, base.find('<'));
    if (std::size_t scope = base.rfind("::"); scope != std::string::npos) base = base.substr(scope + 2);
    k.source_entry = base;
    // The parameters' names where the source is known: messages and tolerances use them.
    std::vector<std::string> names;
    if (!k.source.empty() && m->backend == config::Backend::cuda) {
      names = evolve::parameter_names(evolve::entry_signature(k.source, entry_in_source(k)));
      if (names.size() != kernel.params.size()) names.clear();
    }
    m->parameter_names.push_back(names);
    kernels.push_back(std::move(k));
  }
  // verify.regions may name a region as the source does ("C" for arg2): each such tolerance
  // also holds for the recorded name.
  for (const auto& names : m->parameter_names) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      auto& regions = m->config.verify.regions;
      if (auto it = regions.find(names[i]); it != regions.end() && !names[i].empty())
        regions.emplace("arg" + std::to_string(i), it->second);
    }
  }
  check_pass_pipelines(c, m->backend);
  if (c.llm.enabled()) {
    std::string why = evolve::check_endpoint(c.llm);
    if (!why.empty()) c.fail("llm.endpoint", why);
  }
  m->database = c.output.run_database;
  // Where the results go must be writable (its nearest existing folder, when it is still to be
  // made): found now, not after the budget was spent.
  for (const auto& [key, path] : {std::pair{"output.directory", c.output.directory},
                                  std::pair{"output.run_database", m->database.parent_path()}}) {
    std::filesystem::path existing = path;
    std::error_code ec;
    while (!existing.empty() && !std::filesystem::exists(existing, ec)) existing = existing.parent_path();
    if (!existing.empty() && (!std::filesystem::is_directory(existing, ec) ||
                              ::access(existing.c_str(), W_OK | X_OK) != 0))
      c.fail(key, path.string() + " cannot be written (" + existing.string() +
                      (std::filesystem::is_directory(existing, ec) ? " is not writable"
                                                                   : " is not a directory") +
                      ")");
  }
  if (dry_run) {
    m->search = std::make_unique<Search>(c, m->backend, *m->capture, std::move(kernels));
    return m;
  }
  std::error_code ec;
  std::filesystem::create_directories(m->database.parent_path(), ec);
  if (ec)
    c.fail("output.directory",
           "cannot create " + m->database.parent_path().string() + ": " + ec.message());
  if (std::filesystem::exists(m->database) && !std::filesystem::is_regular_file(m->database))
    c.fail("output.run_database", m->database.string() + " is not a regular file" +
                                      (std::filesystem::is_directory(m->database)
                                           ? " but a directory: name the file, e.g. " +
                                                 (m->database / "run.h5").string()
                                           : std::string()));
  m->lock = std::make_unique<run::DatabaseLock>(m->database);
  if (!m->lock->taken_over().empty())
    log::warning("took over the lock ", m->lock->path().string(), " left by a job that ended without releasing it (",
                 m->lock->taken_over(), ")");
  m->search = std::make_unique<Search>(c, m->backend, *m->capture, std::move(kernels));
  const bool resume =
      options.resume || (options.resume_if_present && std::filesystem::exists(m->database));
  if (resume) {
    if (!std::filesystem::exists(m->database))
      throw UsageError("--resume: there is no run database at " + m->database.string() +
                       " to resume (start the run without --resume)");
    m->record = run::read_run_database(m->database);
    if (m->record.tune_yaml != c.text)
      log::warning(c.file.string(), " changed since the run began; resuming with the new text");
    auto t0 = Clock::now();
    m->restored_in_flight = m->search->restore(m->record);
    std::size_t again = 0;
    for (const auto& generation : m->restored_in_flight) again += generation.size();
    log::info("resumed ", m->database.string(), ": ", m->record.generations, " generation(s), ",
              m->record.candidates.size(), " candidate(s) replayed into the search in ",
              format_ms(seconds_since(t0)),
              again ? "; " + std::to_string(again) + " candidate(s) proposed before the stop run again"
                    : std::string());
  } else if (std::filesystem::exists(m->database)) {
    throw UsageError("a run database already exists at " + m->database.string() +
                     ": continue it with 'r3-mpi " + options.tune_file +
                     " --resume', or move it away to start afresh");
  }
  m->record.tune_yaml = c.text;
  m->record.tune_file = c.file.string();
  m->record.r3_version = std::string(version_string());
  m->record.sessions += 1;
  if (c.llm.enabled()) m->llm = std::make_unique<LlmWorker>(c.llm, c.budget.llm_cost);
  log::info("r3-mpi: ", c.kernels.size(), " kernel(s), backend ", config::to_string(m->backend),
            c.backend == config::Backend::simulate ? " (simulated)" : "", ", ",
            world_size == 1 ? std::string("1 process (searcher and evaluator)")
                            : std::to_string(world_size - 1) + " evaluator(s)",
            ", source level: ",
            c.llm.enabled() ? "LLM at " + c.llm.endpoint : std::string("built-in mutators"));
  return m;
}

protocol::EvaluatorSetup evaluator_setup(const Master& m) {
  protocol::EvaluatorSetup setup;
  setup.backend = std::string(config::to_string(m.backend));
  if (m.config.backend == config::Backend::simulate) {
    setup.backend = "simulate";
    setup.simulation = replay::encode(m.config.simulate);
  }
  for (const auto& k : m.search->kernels()) {
    setup.kernels.push_back({k.capture_index, k.launches});
    setup.readable.insert(setup.readable.end(), k.base.include_dirs.begin(),
                          k.base.include_dirs.end());
    if (!k.source_path.empty())
      setup.readable.push_back(std::filesystem::path(k.source_path).parent_path().string());
  }
  setup.timeout_s = m.config.timing.candidate_timeout_s;
  setup.compile_threads = m.config.timing.compile_threads;
  setup.standby_sandbox = m.config.timing.standby_sandbox;
  setup.capture = m.config.capture;
  setup.log_level = std::string(log::to_string(log::level()));
  return setup;
}

}  // namespace r3::tune
