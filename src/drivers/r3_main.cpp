// r3: record, replay, inspect and report. Parses the command line and calls the libraries.
// Exit status: 0 success, 1 error, 2 wrong usage, 3 a part this build of r3 does not contain.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "exit_codes.hpp"
#include "r3/capture.hpp"
#include "r3/error.hpp"
#include "r3/inspect.hpp"
#include "r3/log.hpp"
#include "r3/version.hpp"

namespace {

struct RecordOptions {
  std::string kernel_regex = ".*";
  std::string output = "r3-capture.h5";
  unsigned launches = 1;
  std::string ranks;
  std::string capture = "reachable";
  bool kokkos = false;
  std::vector<std::string> command;
};

struct ReplayOptions {
  std::string capture;
  std::string kernel;
  std::string source;
  std::string flags;
  std::string passes;
  std::string block;
  std::vector<std::string> defines;
  unsigned repeats = 10;
};

struct InspectArgs {
  std::string file;
  r3::InspectOptions options;
  bool verify = false;
};

struct ReportOptions {
  std::string run;
  std::string output;
};

void add_record(CLI::App& app, RecordOptions& o) {
  CLI::App* record = app.add_subcommand(
      "record", "Run an application and record the launches of selected kernels into a capture");
  record
      ->add_option("-k,--kernel", o.kernel_regex,
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
                   "allocations")
      ->capture_default_str()
      ->check(CLI::IsMember({"reachable", "all"}));
  record->add_flag("--kokkos", o.kokkos,
                   "Load the Kokkos Tools connector so kernels can be selected by Kokkos label");
  record->add_option("command", o.command, "The application and its arguments, after --")
      ->required();
}

void add_replay(CLI::App& app, ReplayOptions& o) {
  CLI::App* replay = app.add_subcommand(
      "replay",
      "Replay recorded launches of a kernel, optionally as a variant, verify and time them");
  replay->add_option("capture", o.capture, "Capture file")->required();
  replay->add_option("-k,--kernel", o.kernel,
                     "Kernel: name, demangled name, Kokkos label or #index (default: the first)");
  replay->add_option("--source", o.source,
                     "Variant source file to compile instead of the recorded code");
  replay->add_option("--flags", o.flags, "Compiler flags for the variant (NVRTC or Clang)");
  replay->add_option("--passes", o.passes,
                     "LLVM pass pipeline in textual syntax, e.g. 'default<O3>'");
  replay->add_option("--block", o.block,
                     "Block shape X,Y,Z (the grid keeps the total thread count)");
  replay->add_option("-D", o.defines, "Define NAME=VALUE for the variant (repeatable)");
  replay->add_option("-n,--repeats", o.repeats, "Timed runs per launch")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

void add_inspect(CLI::App& app, InspectArgs& o) {
  CLI::App* inspect = app.add_subcommand(
      "inspect", "Print what an r3 file holds: device, kernels, launches, regions and sizes");
  inspect->add_option("file", o.file, "Capture file")->required();
  inspect->add_flag("--regions", o.options.list_regions, "List every region of every launch shown");
  inspect->add_option("--launches", o.options.launches_shown, "Launches shown per kernel")
      ->capture_default_str();
  inspect->add_flag("--verify", o.verify,
                    "Read every stored content and check its hash (finds damaged data)");
}

void add_report(CLI::App& app, ReportOptions& o) {
  CLI::App* report = app.add_subcommand(
      "report",
      "Write the results directory and report.html of a tuning run from its run database");
  report->add_option("run", o.run, "Run database (run.h5)")->required();
  report->add_option("-o,--output", o.output, "Directory to write (default: next to run.h5)");
}

int run_inspect(const InspectArgs& args) {
  auto capture = r3::capture::CaptureReader::open(args.file);
  if (args.verify) capture.verify_contents();
  r3::inspect_capture(capture, args.options, std::cout);
  if (args.verify) std::cout << "verified  every stored content matches its hash\n";
  return r3::exit_ok;
}

[[noreturn]] void not_built(const std::string& command, const std::string& what) {
  throw r3::NotAvailableError("'r3 " + command + "' is not built yet: " + what);
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

  RecordOptions record;
  ReplayOptions replay;
  InspectArgs inspect;
  ReportOptions report;
  add_record(app, record);
  add_replay(app, replay);
  add_inspect(app, inspect);
  add_report(app, report);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int status = app.exit(e);
    return status == 0 ? r3::exit_ok : r3::exit_usage;
  }
  if (!log_level.empty()) r3::log::set_level(*r3::log::parse_level(log_level));

  try {
    if (app.got_subcommand("inspect")) return run_inspect(inspect);
    if (app.got_subcommand("record")) {
      not_built("record",
                "recording needs the host capture API and the CUDA recorder, which "
                "this version of r3 does not contain yet");
    }
    if (app.got_subcommand("replay")) {
      not_built("replay",
                "replay needs the host or CUDA backend, which this version of r3 does "
                "not contain yet; 'r3 inspect' shows what a capture holds");
    }
    if (app.got_subcommand("report")) {
      not_built("report",
                "run databases are written by the tuning job, which this version of "
                "r3 does not contain yet");
    }
  } catch (...) {
    return r3::exit_status_of_current_exception();
  }
  return r3::exit_ok;
}
