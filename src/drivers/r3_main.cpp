// r3: record, replay, inspect and report. Parses the command line and calls the libraries.
// Exit status: 0 success, 1 error, 2 wrong usage, 3 a part this build of r3 does not contain.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "r3/capture.hpp"
#include "r3/error.hpp"
#include "r3/exit_codes.hpp"
#include "r3/inspect.hpp"
#include "r3/log.hpp"
#include "r3/record/apply_command.hpp"
#include "r3/record/record_command.hpp"
#include "r3/replay/extract_command.hpp"
#include "r3/replay/options.hpp"
#include "r3/replay/replay_command.hpp"
#include "r3/replay/winner_code.hpp"
#include "r3/report/results.hpp"
#include "r3/run_database.hpp"
#include "r3/version.hpp"

namespace {

// r3 replay --compiler takes replay's own spelling of the compilers.
std::vector<std::string> compiler_names() {
  std::vector<std::string> names;
  for (const auto& [compiler, name] : r3::replay::kCompilerNames) names.emplace_back(name);
  return names;
}

struct RecordArgs {
  r3::record::RecordOptions options;
};

struct ReplayArgs {
  r3::replay::ReplayOptions options;
  std::string capture;
  std::string source;
  std::string block;
  std::string config;
  CLI::Option* repeats_option = nullptr;
  CLI::Option* warmup_option = nullptr;
};

struct InspectArgs {
  std::string file;
  r3::InspectOptions options;
  bool verify = false;
  std::string source;                      // the kernels' source file: regions by source name
  std::vector<std::string> include_dirs;   // for reading it
};

struct ReportOptions {
  std::string run;
  std::string output;
};

void add_record(CLI::App& app, RecordArgs& a) {
  r3::record::RecordOptions& o = a.options;
  CLI::App* record = app.add_subcommand(
      "record", "Run an application and record the launches of selected kernels into a capture");
  record
      ->add_option("-k,--kernel", o.kernels,
                   "Kernels to record: a regex over mangled, demangled names and Kokkos labels")
      ->capture_default_str();
  record
      ->add_option("-o,--output", o.output,
                   "Capture file to write (under MPI: one file per rank, rank number added)")
      ->capture_default_str();
  record->add_option("--launches", o.launches, "Distinct launches to record per kernel")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  record->add_option("--ranks", o.ranks,
                     "MPI ranks to record, e.g. 0,3 (default: all; rank from OMPI_COMM_WORLD_RANK, "
                     "PMI_RANK, SLURM_PROCID or FLUX_TASK_RANK)");
  record
      ->add_option("--capture", o.capture,
                   "Memory to capture: 'reachable' from arguments and globals, or 'all' live "
                   "allocations (CUDA applications; host applications declare their regions)")
      ->capture_default_str()
      ->check(CLI::IsMember({"reachable", "all"}));
  record->add_flag("--kokkos", o.kokkos,
                   "Load the Kokkos Tools connector so kernels can be selected by Kokkos label");
  record->add_option("command", o.command, "The application and its arguments, after --")
      ->required();
}

void add_apply(CLI::App& app, r3::record::ApplyOptions& o) {
  CLI::App* apply = app.add_subcommand(
      "apply",
      "Run an application, unchanged, with an r3 result: a CUDA application with the winners' "
      "code in place of its tuned kernels (compiled here for this GPU, launched with the "
      "winners' block shape), a Kokkos application with the tuned values (Kokkos Tools "
      "connector). Its exit status is the application's");
  apply->add_option("result", o.result, "A run's best.yaml, or its results directory")->required();
  apply->add_flag("--kokkos-without-tuning", o.kokkos_without_tuning,
                  "The application's Kokkos was built without Kokkos_ENABLE_TUNING: preload "
                  "libr3kokkos_compat.so to answer the application's own tuning variables");
  apply->add_flag("--original", o.original,
                  "Apply nothing, for comparing with an applied run: CUDA: time the result's "
                  "kernels on the GPU (CUPTI) as an applied run does; Kokkos: run with the "
                  "connector loaded without the result");
  apply->add_flag("--check", o.check,
                  "CUDA: the first launch of each substituted kernel also runs the application's "
                  "kernel on the same memory; a winner whose results differ beyond the run's "
                  "tolerances is dropped (the application's code runs) and the reason printed");
  apply->add_option("command", o.command, "The application and its arguments, after --")
      ->required();
}

// A CUDA result's winners are compiled here, for this GPU, by replay's compile path; the
// recorder's side runs the application with them.
int run_apply(r3::record::ApplyOptions& o) {
  if (o.command.empty()) throw r3::UsageError("r3 apply: give the application to run after --");
  const std::vector<std::filesystem::path> files = r3::replay::result_files(o.result);
  if (r3::replay::is_cuda_result(files, std::cerr)) {
    const r3::replay::WinnerCodes codes = r3::replay::compile_winners(files, std::cerr);
    r3::record::CudaWinners winners;
    winners.manifest.architecture = codes.architecture;
    for (const r3::replay::WinnerCode& w : codes.winners) {
      r3::record::cuda::AppliedKernel k;
      k.kernel = w.kernel;
      k.code = std::to_string(winners.cubins.size()) + ".cubin";
      k.function = w.function;
      k.block = w.block;
      k.keep_grid = w.keep_grid;
      k.speedup = w.speedup;
      for (const auto& t : w.tolerances) k.tolerances.push_back({t.type, t.rtol, t.atol});
      k.globals = w.globals;
      winners.manifest.kernels.push_back(std::move(k));
      winners.cubins.push_back(w.cubin);
    }
    o.cuda = std::move(winners);
  } else if (!o.original) {
    for (const r3::replay::KokkosTeamKernel& k : r3::replay::kokkos_team_kernels(files, std::cerr))
      o.kokkos_team_limits.push_back(
          {k.label, k.max_team_threads, k.auto_team_size, k.auto_vector_length});
  }
  return r3::record::apply_to_application(o, std::cerr);
}

void add_replay(CLI::App& app, ReplayArgs& a) {
  r3::replay::ReplayOptions& o = a.options;
  CLI::App* replay = app.add_subcommand(
      "replay",
      "Replay recorded launches of a kernel, optionally as a variant, verify and time them");
  replay->add_option("capture", a.capture, "Capture file (not with --config)");
  CLI::Option* config = replay->add_option(
      "--config", a.config,
      "Replay a kernel as a tune.yaml describes it (its capture, source, defines, flags, passes, "
      "block, launches, timing), e.g. the best.yaml of a tuning run's results");
  replay->add_option(
      "-k,--kernel", o.kernel,
      "Kernel: name, demangled name, Kokkos label or #index (default: the only one)");
  replay
      ->add_option("--source", a.source,
                   "Variant source file to compile instead of the recorded code")
      ->excludes(config);
  replay->add_option("--entry", o.entry,
                     "The kernel function in --source (default: the recorded kernel's name)");
  replay->add_option("--flags", o.flags, "Compiler flags for the variant, e.g. '-ffast-math'")
      ->excludes(config);
  replay
      ->add_option("--compiler", o.compiler,
                   "CUDA captures: nvrtc, clang (Clang/NVPTX with --passes) or recorded (the "
                   "capture's cubin/PTX) (default: nvrtc with --source, else recorded)")
      ->check(CLI::IsMember(compiler_names()))
      ->excludes(config);
  replay
      ->add_option("--passes", o.passes,
                   "LLVM pass pipeline in textual syntax, e.g. 'default<O3>' (default: "
                   "default<O2>)")
      ->excludes(config);
  replay
      ->add_option("--block", a.block,
                   "Block shape X,Y,Z (GPU backends; the grid keeps the total thread count)")
      ->excludes(config);
  replay
      ->add_flag("--keep-grid", o.keep_grid,
                 "With --block: launch the recorded grid (kernels whose blocks each do one item)")
      ->excludes(config);
  replay->add_option("-D", o.defines, "Define NAME=VALUE for the variant (repeatable)")
      ->excludes(config);
  replay->add_option("--launch", o.launches, "Replay only these recorded launches (repeatable)")
      ->excludes(config);
  a.repeats_option = replay->add_option("-n,--repeats", o.repeats, "Timed runs per launch")
                         ->capture_default_str()
                         ->check(CLI::PositiveNumber);
  a.warmup_option =
      replay->add_option("--warmup", o.warmup, "Untimed runs per launch before timing")
          ->capture_default_str();
  replay->add_flag("--flush-l2", o.flush_l2,
                   "GPU backends: evict the L2 cache before every timed launch");
}

void add_inspect(CLI::App& app, InspectArgs& o) {
  CLI::App* inspect = app.add_subcommand(
      "inspect", "Print what an r3 file holds: device, kernels, launches, regions and sizes");
  inspect->add_option("file", o.file, "Capture file or run database (run.h5)")->required();
  inspect->add_flag("--regions", o.options.list_regions, "List every region of every launch shown");
  inspect->add_flag("--args", o.options.show_args,
                    "Print each shown launch's parameter bytes in hex (a Kokkos closure's policy)");
  inspect->add_option("--launches", o.options.launches_shown, "Launches shown per kernel")
      ->capture_default_str();
  inspect->add_flag("--verify", o.verify,
                    "Read every stored content and check its hash (finds damaged data)");
  inspect->add_option("--source", o.source,
                      "The kernels' source file (CUDA): regions are shown by the names its "
                      "parameters have there, 'C (arg2)'")
      ->check(CLI::ExistingFile);
  inspect->add_option("-I,--include-dir", o.include_dirs, "Include directory for --source");
}

void add_extract(CLI::App& app, r3::replay::ExtractCommandOptions& o) {
  CLI::App* extract = app.add_subcommand(
      "extract",
      "Write the self-contained, device-only unit of a kernel cut from an application's own "
      "source file (what r3 tunes when tune.yaml's source: is that file)");
  extract->add_option("file", o.file, "The application's source file (.cu, .cuh, .cpp)")
      ->required();
  extract->add_option("-k,--kernel", o.kernel,
                      "The kernel: its name, qualified name, template or template instance")
      ->required();
  extract->add_option("--compile-commands", o.compile_commands,
                      "compile_commands.json (or its directory) with the file's build flags");
  extract->add_option("-I,--include-dir", o.include_dirs, "Include directory (repeatable)");
  extract->add_option("-D,--define", o.defines, "Macro NAME=VALUE (repeatable)");
  extract->add_option("--std", o.std, "C++ standard, e.g. c++17");
  extract->add_option("-o,--output", o.output, "Write the unit here (default: standard output)");
  extract->add_flag("--check", o.check, "Compile the unit with NVRTC, as the tuning job would");
  extract->add_option("--arch", o.arch, "GPU architecture for --check")->capture_default_str();
}

void add_report(CLI::App& app, ReportOptions& o) {
  CLI::App* report = app.add_subcommand(
      "report",
      "Write the results directory and report.html of a tuning run from its run database");
  report->add_option("run", o.run, "Run database (run.h5)")->required();
  report->add_option("-o,--output", o.output,
                     "Directory to write (default: the directory run.h5 is in)");
}

void print_run_summary(const r3::run::RunRecord& record,
                       const std::vector<r3::report::KernelResult>& results, std::ostream& out) {
  std::map<std::string, std::size_t> outcomes;
  for (const auto& c : record.candidates) ++outcomes[std::string(to_string(c.outcome))];
  out << "run       " << record.tune_file << " (r3 " << record.r3_version << ")\n"
      << "progress  " << record.generations << " generation(s), " << record.candidates.size()
      << " candidates, " << record.sessions << " session(s), " << record.elapsed_seconds
      << " s\noutcomes ";
  for (const auto& [why, n] : outcomes) out << " " << n << " " << why << ";";
  out << "\n";
  for (const std::string& line : r3::report::summary_lines(results))
    out << "kernel    " << line << "\n";
}

int run_report(const ReportOptions& o) {
  r3::run::RunRecord record = r3::run::read_run_database(o.run);
  std::filesystem::path directory = o.output.empty()
                                        ? std::filesystem::absolute(o.run).parent_path()
                                        : std::filesystem::path(o.output);
  r3::report::ResultsFiles files = r3::report::write_results(record, directory);
  print_run_summary(record, files.results, std::cout);
  for (const auto& k : files.kernels) {
    for (const auto& path : {k.source, k.diff, k.fragment})
      if (!path.empty()) std::cout << "wrote     " << path.string() << "\n";
  }
  std::cout << "wrote     " << files.candidates_csv.string() << "\n"
            << "wrote     " << files.confirmations_csv.string() << "\n"
            << "report    " << files.report.string() << "\n";
  return r3::exit_ok;
}

int run_inspect(const InspectArgs& args) {
  if (std::optional<r3::run::RunRecord> record = r3::run::read_if_run_database(args.file)) {
    print_run_summary(*record, r3::report::analyse(*record, r3::report::kernel_names(*record)),
                      std::cout);
    return r3::exit_ok;
  }
  auto capture = r3::capture::CaptureReader::open(args.file);
  if (args.verify) capture.verify_contents();
  r3::InspectOptions options = args.options;
  if (!args.source.empty()) {
    std::vector<std::filesystem::path> include_dirs(args.include_dirs.begin(),
                                                    args.include_dirs.end());
    for (const r3::capture::Kernel& kernel : capture.kernels()) {
      const std::string name = kernel.demangled_name.empty()
                                   ? kernel.name
                                   : r3::capture::instance_name(kernel.demangled_name);
      r3::replay::ExtractedSource read =
          r3::replay::extract_source(args.source, name, {}, include_dirs, {});
      if (read.ok && read.parameter_names.size() == kernel.params.size())
        options.parameter_names[kernel.name] = read.parameter_names;
      else
        std::cerr << "r3 inspect: " << args.source << " does not define kernel " << name
                  << " with " << kernel.params.size() << " parameter(s): its regions keep "
                  << "their recorded names\n";
    }
  }
  r3::inspect_capture(capture, options, std::cout);
  if (args.verify) std::cout << "verified  every stored content matches its hash\n";
  return r3::exit_ok;
}

r3::capture::Dim3 parse_block(const std::string& text) {
  r3::capture::Dim3 block;
  unsigned values[3] = {1, 1, 1};
  int fields = std::sscanf(text.c_str(), "%u,%u,%u", &values[0], &values[1], &values[2]);
  if (fields < 1 || values[0] == 0 || values[1] == 0 || values[2] == 0) {
    throw r3::UsageError("--block " + text + ": expected X[,Y[,Z]] with positive numbers");
  }
  block.x = values[0];
  block.y = values[1];
  block.z = values[2];
  return block;
}

int run_replay(ReplayArgs& args) {
  if (!args.config.empty()) {
    if (!args.capture.empty())
      throw r3::UsageError("--config " + args.config +
                           " names its own capture; leave out the capture argument");
    r3::config::TuneConfig config = r3::config::load_tune_config(args.config);
    auto capture = r3::capture::CaptureReader::open(config.capture);
    r3::config::check_against_capture(config, capture);
    r3::replay::ReplayOptions o = r3::replay::options_from_tune_yaml(config, args.options.kernel);
    // Repetitions given on the command line win over the file's timing.
    if (args.repeats_option->count() > 0) o.repeats = args.options.repeats;
    if (args.warmup_option->count() > 0) o.warmup = args.options.warmup;
    return r3::replay::replay_capture(o, std::cout);
  }
  if (args.capture.empty())
    throw r3::UsageError("r3 replay needs a capture file, or --config TUNE.yaml");
  args.options.capture = args.capture;
  args.options.source = args.source;
  if (!args.block.empty()) args.options.block = parse_block(args.block);
  return r3::replay::replay_capture(args.options, std::cout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "r3 (Record-Remix-Replay): record GPU kernel launches of an application, replay "
      "and tune them.\nThe tuning job itself is r3-mpi."};
  app.name("r3");
  app.set_version_flag("--version", r3::build_description());
  app.require_subcommand(1);
  std::string log_level;
  app.add_option("--log-level", log_level, "error, warning, info, debug or trace (or R3_LOG_LEVEL)")
      ->check(CLI::IsMember({"error", "warning", "info", "debug", "trace"}));

  RecordArgs record;
  ReplayArgs replay;
  InspectArgs inspect;
  ReportOptions report;
  r3::record::ApplyOptions apply;
  r3::replay::ExtractCommandOptions extract;
  add_record(app, record);
  add_apply(app, apply);
  add_replay(app, replay);
  add_inspect(app, inspect);
  add_report(app, report);
  add_extract(app, extract);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int status = app.exit(e);
    return status == 0 ? r3::exit_ok : r3::exit_usage;
  }
  if (!log_level.empty()) r3::log::set_level(*r3::log::parse_level(log_level));

  try {
    if (app.got_subcommand("inspect")) return run_inspect(inspect);
    if (app.got_subcommand("record"))
      return r3::record::record_application(record.options, std::cerr);
    if (app.got_subcommand("apply")) return run_apply(apply);
    if (app.got_subcommand("replay")) return run_replay(replay);
    if (app.got_subcommand("report")) return run_report(report);
    if (app.got_subcommand("extract"))
      return r3::replay::extract_command(extract, std::cout, std::cerr);
  } catch (...) {
    return r3::exit_status_of_current_exception();
  }
  return r3::exit_ok;
}
