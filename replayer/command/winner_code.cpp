#include "r3/replay/winner_code.hpp"

#include <algorithm>
#include <ostream>
#include <sstream>

#include "r3/config/tune_config.hpp"
#include "r3/error.hpp"
#include "r3/files.hpp"
#include "r3/replay/backend.hpp"
#include "r3/replay/kokkos_policy.hpp"
#include "r3/replay/replay_command.hpp"
#include "r3/result_notes.hpp"
#include "r3/winner_code_file.hpp"

namespace r3::replay {

namespace fs = std::filesystem;

std::vector<fs::path> result_files(const fs::path& result) {
  std::error_code ec;
  if (!fs::exists(result, ec))
    throw ConfigError("r3 apply: " + result.string() +
                      ": no such file or directory (give a run's best.yaml or results directory)");
  if (fs::is_regular_file(result, ec)) return {result};
  std::vector<fs::path> files;
  if (fs::is_directory(result, ec)) {
    if (fs::is_regular_file(result / "best.yaml", ec)) files.push_back(result / "best.yaml");
    for (const auto& entry : fs::directory_iterator(result, ec)) {
      const fs::path best = entry.path() / "best.yaml";
      if (entry.is_directory(ec) && fs::is_regular_file(best, ec)) files.push_back(best);
    }
  }
  if (files.empty())
    throw ConfigError(result.string() +
                      ": no best.yaml, nor <kernel>/best.yaml in it (give a tuning run's results "
                      "directory or one of its best.yaml files)");
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

config::TuneConfig load_result(const fs::path& file, std::string& text) {
  text = read_text_file(file, "result");
  return config::parse_tune_config(text, file);
}

// The result as a tune.yaml; nullopt when it is not a whole one (Kokkos tuned values may be a
// `kernels:` list alone: the connector's path says what is wrong with them).
std::optional<config::TuneConfig> tune_yaml_of(const fs::path& file) {
  std::string text;
  try {
    return load_result(file, text);
  } catch (const ConfigError&) {
    return std::nullopt;
  }
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The factor of the result's "# confirmed speedup 1.42x ..." line; 0 without one.
double confirmed_speedup(const std::string& text) {
  const auto at = text.find(kConfirmedSpeedupNote);
  if (at == std::string::npos) return 0;
  try {
    return std::stod(text.substr(at + kConfirmedSpeedupNote.size()));
  } catch (const std::exception&) {
    return 0;
  }
}

// The code the run kept for the winner (best.code beside its best.yaml), as it was confirmed;
// nullopt when there is none (a run confirmed before code was kept, or without confirmation):
// the winner is then compiled here.
std::optional<Backend::LoadableCode> stored_code(const fs::path& result_file,
                                                 const std::string& kernel, std::ostream& report) {
  std::optional<run::CodeRecord> stored = read_winner_code(result_file.parent_path());
  if (!stored) return std::nullopt;
  report << "r3 apply: kernel " << kernel << ": the code of candidate " << stored->candidate
         << " as it was confirmed (" << stored->architecture << ", CUDA " << stored->toolkit << ", "
         << stored->image.size() << " bytes)\n";
  return Backend::LoadableCode{std::move(stored->image), std::move(stored->function),
                               std::move(stored->architecture), std::move(stored->toolkit)};
}

// A Kokkos TeamPolicy kernel of `capture` whose team shape Kokkos' team-size tuner hands a tool,
// with the largest team it allows on this GPU; nullopt, saying why on `report` where that is
// not obvious, when there is none or it cannot be found here.
std::optional<KokkosTeamKernel> kokkos_team_kernel(const capture::CaptureReader& capture,
                                                   const config::KernelSelection& selection,
                                                   std::ostream& report) {
  // Kokkos' largest team on CUDA (CudaTraits::MaxHierarchicalParallelism) and the shared memory
  // a block may use without opting in, which Kokkos' block size deduction keeps to.
  constexpr std::uint32_t kMaxTeamThreads = 1024;
  constexpr int kSharedPerBlock = 48 * 1024;
  const std::size_t index = kernel_index(capture, selection.name);
  const capture::Kernel& kernel = capture.kernels()[index];
  if (kernel.kokkos_label.empty() || !is_team_parallel_for(kernel.demangled_name))
    return std::nullopt;
  const std::size_t launch = selection.launches.empty() ? 0 : selection.launches.front();
  if (launch >= kernel.launches.size()) return std::nullopt;
  const capture::Launch& recorded = kernel.launches[launch];
  const auto shape =
      find_team_shape(recorded.args, recorded.block, recorded.grid, recorded.shared_memory_bytes);
  if (!shape || !(shape->auto_team_size || shape->auto_vector_length)) return std::nullopt;
  const std::string what = "r3 apply: Kokkos kernel '" + kernel.kokkos_label + "': ";
  auto unanswered = [&](const std::string& why) {
    report << what << why << "; Kokkos' team-size tuner is not answered for it\n";
    return std::nullopt;
  };
  // Kokkos counts a team's scratch against its shared memory when it lists team sizes, which
  // r3 does not redo (nor does it tune such teams).
  if (shape->uses_scratch) return unanswered("its teams use scratch memory");
  Compiled compiled;
  try {
    std::unique_ptr<Backend> backend = make_backend(capture.info().device.backend);
    backend->prepare(capture, index, {launch});
    Variant application;  // the recorded code: what the application runs
    application.compiler = replay::Compiler::recorded;
    compiled = backend->compile(application);
  } catch (const Error& e) {
    compiled.ok = false;
    compiled.diagnostics = e.what();
  }
  const int max_threads = compiled.resources.max_threads_per_block;
  if (!compiled.ok || max_threads < 32)
    return unanswered(
        "its recorded code does not load here" +
        (compiled.diagnostics.empty() ? "" : ": " + first_line(compiled.diagnostics)));
  std::uint32_t threads = 1;
  while (threads * 2 <= std::min<std::uint32_t>(kMaxTeamThreads, max_threads)) threads *= 2;
  // Kokkos' team reduce space and team memory, 16 + 8 bytes per thread at vector length 1.
  if (compiled.resources.shared_bytes + 16 + 8 * static_cast<int>(threads) > kSharedPerBlock)
    return unanswered("its static shared memory (" +
                      std::to_string(compiled.resources.shared_bytes) +
                      " bytes) limits its team below what this GPU's registers allow, which r3 "
                      "does not work out as Kokkos does");
  report << what << "Kokkos' team-size tuner allows it " << threads << " threads ("
         << compiled.resources.registers << " registers per thread)\n";
  return KokkosTeamKernel{kernel.kokkos_label, threads, shape->auto_team_size,
                          shape->auto_vector_length};
}

}  // namespace

bool is_cuda_result(const std::vector<fs::path>& files, std::ostream& report) {
  for (const fs::path& file : files) {
    const std::optional<config::TuneConfig> result = tune_yaml_of(file);
    if (!result) return false;
    const config::TuneConfig& config = *result;
    if (config.backend != config::Backend::cuda && config.backend != config::Backend::automatic)
      return false;
    std::error_code ec;
    if (!fs::is_regular_file(config.capture, ec)) {
      if (config.backend == config::Backend::cuda)
        report << "r3 apply: " << file.string() << ": its capture " << config.capture.string()
               << " is not here: applied as Kokkos tuned values (a CUDA application's winners "
                  "are compiled for this GPU from their capture)\n";
      return false;
    }
    const auto capture = capture::CaptureReader::open(config.capture);
    if (capture.info().device.backend != "cuda") return false;
    // Kokkos kernels on CUDA are tuned through Kokkos' tuning interface, not substituted.
    for (const config::KernelSelection& k : config.kernels)
      if (!capture.kernel(k.name).kokkos_label.empty()) return false;
  }
  return !files.empty();
}

WinnerCodes compile_winners(const std::vector<fs::path>& files, std::ostream& report) {
  WinnerCodes codes;
  for (const fs::path& file : files) {
    std::string text;
    const config::TuneConfig config = load_result(file, text);
    const ReplayOptions options = options_from_tune_yaml(config, "");
    auto refuse = [&](const std::string& why) {
      codes.refused.push_back(options.kernel + ": " + why);
      report << "r3 apply: kernel " << options.kernel << " keeps the application's code: " << why
             << "\n";
    };
    if (text.find(kKeepOriginalNote) != std::string::npos) {
      refuse("no candidate was faster than it (" + file.string() + ")");
      continue;
    }
    const auto capture = capture::CaptureReader::open(options.capture);
    const std::size_t index = kernel_index(capture, options.kernel);
    const capture::DeviceInfo& recorded = capture.info().device;
    std::optional<Backend::LoadableCode> code =
        stored_code(file, capture.kernels()[index].name, report);
    if (!code) {
      std::unique_ptr<Backend> backend = make_backend(recorded.backend);
      // Compiling needs the kernel's facts, not its memory: one launch is enough.
      backend->prepare(capture, index, {options.launches.empty() ? 0 : options.launches.front()});
      const Compiled compiled = backend->compile(variant_of(options, backend->name()));
      if (!compiled.ok) {
        refuse("its winner does not compile here: " + first_line(compiled.diagnostics));
        continue;
      }
      code = backend->loadable_code(compiled);
      if (!code) {
        refuse("the " + std::string(backend->name()) + " backend has no code to load elsewhere");
        continue;
      }
    }
    if (codes.architecture.empty()) codes.architecture = code->architecture;
    if (recorded.architecture != code->architecture) {
      refuse("it was tuned on " + recorded.name + " (" + recorded.architecture + "), this GPU is " +
             code->architecture + ": tune it here");
      continue;
    }
    if (code->architecture != codes.architecture) {
      refuse("its code is for " + code->architecture + ", another winner's for " +
             codes.architecture + ": one application runs on one GPU architecture");
      continue;
    }
    if (!recorded.toolkit_version.empty() && recorded.toolkit_version != code->toolkit) {
      refuse("it was recorded and tuned with CUDA " + recorded.toolkit_version +
             ", this r3 compiles with CUDA " + code->toolkit + ": tune it again with this toolkit");
      continue;
    }
    WinnerCode w;
    w.result_file = file;
    w.kernel = capture.kernels()[index].name;
    w.function = code->function;
    w.cubin = std::move(code->bytes);
    w.block = options.block;
    w.keep_grid = options.keep_grid;
    w.speedup = confirmed_speedup(text);
    for (const capture::Launch& launch : capture.kernels()[index].launches)
      for (const capture::Region& g : launch.globals)
        if (!g.name.empty() &&
            std::find(w.globals.begin(), w.globals.end(), g.name) == w.globals.end())
          w.globals.push_back(g.name);
    for (const auto& [type, tolerance] : config.verify.types)
      if (!tolerance.bitwise) w.tolerances.push_back({type, tolerance.rtol, tolerance.atol});
    report << "r3 apply: kernel " << options.kernel << ": the winner of " << file.string();
    if (w.block) report << ", block " << w.block->x << "x" << w.block->y << "x" << w.block->z;
    if (w.speedup > 0) report << ", " << w.speedup << "x confirmed in replay";
    report << "\n";
    codes.winners.push_back(std::move(w));
  }
  return codes;
}

std::vector<KokkosTeamKernel> kokkos_team_kernels(const std::vector<fs::path>& files,
                                                  std::ostream& report) {
  std::vector<KokkosTeamKernel> kernels;
  for (const fs::path& file : files) {
    const std::optional<config::TuneConfig> result = tune_yaml_of(file);
    std::error_code ec;
    if (!result || !fs::is_regular_file(result->capture, ec)) continue;  // no capture to look at
    const config::TuneConfig& config = *result;
    try {  // a result or GPU it cannot use costs the tuner's answers, not the run
      const auto capture = capture::CaptureReader::open(config.capture);
      if (capture.info().device.backend != "cuda") continue;
      for (const config::KernelSelection& selection : config.kernels) {
        if (auto k = kokkos_team_kernel(capture, selection, report)) {
          const bool seen = std::any_of(kernels.begin(), kernels.end(), [&](const auto& other) {
            return other.label == k->label;
          });  // a results directory's best.yaml repeats its kernels' own
          if (!seen) kernels.push_back(std::move(*k));
        }
      }
    } catch (const std::exception& e) {
      report << "r3 apply: " << file.string() << ": Kokkos' team-size tuner is not answered for "
             << "its kernels: " << first_line(e.what()) << "\n";
    }
  }
  return kernels;
}

}  // namespace r3::replay
