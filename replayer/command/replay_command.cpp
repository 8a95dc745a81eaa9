#include "r3/replay/replay_command.hpp"

#include <cstdio>
#include <fstream>
#include <ostream>
#include <sstream>

#include "r3/error.hpp"
#include "r3/files.hpp"
#include "r3/inspect.hpp"
#include "r3/replay/backend.hpp"

namespace r3::replay {
namespace {

std::string microseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  return text;
}

std::string read_file(const std::filesystem::path& path) { return read_text_file(path, "source"); }

void print_region(const RegionCheck& check, std::ostream& out) {
  out << "      " << (check.passed ? "ok   " : "FAIL ") << check.name << "  "
      << (check.expected_to_change ? "changed, " + check.tolerance : std::string("untouched"));
  if (check.passed) {
    if (check.expected_to_change && check.max_error > 0) out << ", max error " << check.max_error;
  } else {
    out << ": " << check.mismatches << " of " << check.elements << " elements "
        << (check.expected_to_change ? "differ" : "modified") << ", max error " << check.max_error
        << ", first bad index " << check.first_bad_index;
  }
  out << "\n";
}

}  // namespace

ReplayOptions options_from_tune_yaml(const config::TuneConfig& config, const std::string& kernel) {
  const config::KernelSelection* selection = nullptr;
  std::string known;
  for (const auto& k : config.kernels) {
    known += (known.empty() ? "" : ", ") + k.name;
    if (k.name == kernel) selection = &k;
  }
  if (kernel.empty()) {
    if (config.kernels.size() != 1)
      throw UsageError(config.file.string() + " names " + std::to_string(config.kernels.size()) +
                       " kernels; choose one with -k (" + known + ")");
    selection = &config.kernels.front();
  }
  if (!selection)
    throw UsageError("kernel '" + kernel + "' is not in " + config.file.string() + " (it has " +
                     known + ")");
  ReplayOptions o;
  o.capture = config.capture;
  o.kernel = selection->name;
  o.source = selection->source;
  o.entry = selection->entry;
  for (const auto& flag : selection->flags) o.flags += (o.flags.empty() ? "" : " ") + flag;
  o.passes = selection->passes;
  for (const auto& [name, value] : selection->defines) o.defines.push_back(name + "=" + value);
  if (!selection->source.empty()) {
    // Sources that declare R3_TUNABLEs are compiled with the marker defined away, as in the search.
    std::string text = read_file(selection->source);
    if (text.find("R3_TUNABLE(") != std::string::npos) o.defines.push_back("R3_TUNABLE(...)=");
  }
  o.include_dirs = selection->include_dirs;
  if (selection->block.size() == 3)
    o.block = capture::Dim3{selection->block[0], selection->block[1], selection->block[2]};
  o.keep_grid = selection->keep_grid;
  o.launches = selection->launches;
  o.warmup = config.timing.warmup;
  o.repeats = config.timing.repeats;
  o.flush_l2 = config.timing.flush_l2;
  return o;
}

std::size_t kernel_index(const capture::CaptureReader& capture, const std::string& name) {
  if (!name.empty())
    return static_cast<std::size_t>(&capture.kernel(name) - capture.kernels().data());
  if (capture.kernels().size() == 1) return 0;
  std::string known;
  for (const capture::Kernel& k : capture.kernels()) known += (known.empty() ? "" : ", ") + k.name;
  throw UsageError("the capture holds " + std::to_string(capture.kernels().size()) +
                   " kernels; choose one with -k (" + known + ")");
}

Variant variant_of(const ReplayOptions& options, std::string_view backend) {
  Variant variant;
  if (!options.compiler.empty()) {
    auto compiler = replay::parse_compiler(options.compiler);
    if (!compiler)
      throw UsageError("--compiler " + options.compiler + ": expected nvrtc, clang or recorded");
    variant.compiler = *compiler;
  } else if (backend == "cuda") {
    variant.compiler =
        options.source.empty() ? replay::Compiler::recorded : replay::Compiler::nvrtc;
  }
  if (!options.source.empty()) {
    variant.source_text = read_file(options.source);
    // Under its absolute path, as r3-mpi compiles it: quoted includes resolve beside the file.
    const std::filesystem::path path = std::filesystem::absolute(options.source).lexically_normal();
    variant.source_name = path.string();
    variant.include_dirs.push_back(path.parent_path());
  }
  for (const auto& dir : options.include_dirs) variant.include_dirs.push_back(dir);
  variant.entry = options.entry;
  variant.passes = options.passes;
  variant.block = options.block;
  variant.keep_grid = options.keep_grid;
  std::istringstream flags(options.flags);
  for (std::string flag; flags >> flag;) variant.flags.push_back(flag);
  for (const std::string& define : options.defines) {
    std::size_t equals = define.find('=');
    std::string name = define.substr(0, equals);
    if (name.empty()) throw UsageError("-D " + define + ": expected NAME=VALUE");
    variant.defines[name] = equals == std::string::npos ? "1" : define.substr(equals + 1);
  }
  return variant;
}

int replay_capture(const ReplayOptions& options, std::ostream& out) {
  auto capture = capture::CaptureReader::open(options.capture);
  const std::size_t index = kernel_index(capture, options.kernel);
  const capture::Kernel& kernel = capture.kernels()[index];
  std::unique_ptr<Backend> backend = make_backend(capture.info().device.backend);
  backend->prepare(capture, index, options.launches);

  Variant variant = variant_of(options, backend->name());
  out << "kernel    " << kernel.name << " (#" << index << ") from " << options.capture.string()
      << ", backend " << backend->name() << "\n";
  out << "variant   " << (options.source.empty() ? "the recorded code" : options.source.string());
  if (!variant.passes.empty()) out << ", passes " << variant.passes;
  for (const auto& [name, value] : variant.defines) out << ", -D" << name << "=" << value;
  if (!variant.flags.empty()) out << ", flags " << options.flags;
  if (backend->name() == "cuda") out << ", compiler " << replay::to_string(variant.compiler);
  if (variant.block)
    out << ", block " << variant.block->x << "," << variant.block->y << "," << variant.block->z;
  out << "\n";
  out << "memory    " << backend->placement() << "\n";

  Compiled compiled = backend->compile(variant);
  if (!compiled.ok) {
    out << "compile   FAILED\n" << compiled.diagnostics;
    if (!compiled.diagnostics.empty() && compiled.diagnostics.back() != '\n') out << "\n";
    out << "result    compile error\n";
    return 1;
  }
  char compile_line[96];
  std::snprintf(compile_line, sizeof compile_line, "%.3f s, code %s", compiled.seconds,
                format_bytes(compiled.resources.code_bytes).c_str());
  out << "compile   " << compile_line << "\n";
  if (!compiled.diagnostics.empty()) out << compiled.diagnostics;

  RunOptions run_options;
  run_options.warmup = options.warmup;
  run_options.repeats = options.repeats;
  run_options.flush_l2 = options.flush_l2;
  RunResult result = backend->run(compiled, run_options);
  for (const LaunchResult& launch : result.launches) {
    out << "launch " << launch.launch << "  " << (launch.verified ? "verified" : "NOT VERIFIED");
    if (launch.verified && !launch.time.samples.empty()) {
      out << "  median " << microseconds(launch.time.median) << "  min "
          << microseconds(launch.time.min) << "  max " << microseconds(launch.time.max) << "  ("
          << launch.time.samples.size() << " runs; restore " << microseconds(launch.restore_seconds)
          << "/run, verify " << microseconds(launch.verify_seconds) << ")";
    }
    out << "\n";
    for (const RegionCheck& check : launch.regions) print_region(check, out);
  }
  if (result.outcome != Outcome::ok) {
    out << "result    " << to_string(result.outcome) << ": " << result.message << "\n";
    return 1;
  }
  out << "result    ok: " << result.launches.size() << " launch(es) verified, total median "
      << microseconds(result.seconds) << "\n";
  return 0;
}

}  // namespace r3::replay
