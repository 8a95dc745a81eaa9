// r3-mpi: the tuning job (`srun -n 64 r3-mpi tune.yaml`), a thin main over r3::tune::run_job.
// Rank 0 reads and checks the configuration; every rank leaves with the same exit status, so a
// bad tune.yaml never hangs a job.
#include <CLI/CLI.hpp>

#include <iostream>
#include <sstream>
#include <string>

#include "r3/capture.hpp"
#include "r3/config/tune_config.hpp"
#include "r3/error.hpp"
#include "r3/exit_codes.hpp"
#include "r3/log.hpp"
#include "r3/tune/job.hpp"
#include "r3/version.hpp"
#include "world.hpp"

namespace {

struct Options {
  std::string tune_file;
  bool resume = false;
  bool resume_if_present = false;
  bool dry_run = false;
  std::string log_level;
};

// Validates the configuration against its capture; with dry_run prints the resolved configuration.
int check_configuration(const Options& options, int world_size) {
  r3::config::TuneConfig config = r3::config::load_tune_config(options.tune_file);
  r3::capture::CaptureReader capture = [&] {
    try {
      return r3::capture::CaptureReader::open(config.capture);
    } catch (const r3::Error& e) {
      config.fail("capture", e.what());
    }
  }();
  r3::config::Backend backend = r3::config::check_against_capture(config, capture);
  if (options.dry_run) {
    std::size_t launches = 0;
    for (const auto& selection : config.kernels) {
      const auto& kernel = capture.kernel(selection.name);
      launches += selection.launches.empty() ? kernel.launches.size() : selection.launches.size();
    }
    std::cout << "# r3-mpi --dry-run: " << config.file.string() << " is valid\n"
              << "# backend " << r3::config::to_string(backend) << ", " << config.kernels.size()
              << " kernel(s), " << launches << " recorded launch(es) to verify and time, "
              << world_size << " rank(s): 1 searcher"
              << (world_size > 1 ? ", " + std::to_string(world_size - 1) + " evaluator(s)"
                                 : " that also evaluates")
              << "\n# resolved configuration (every default filled in):\n"
              << r3::config::to_yaml(config);
    std::cout << "# compiling and verifying each kernel's original in a sandbox:\n";
    std::cout.flush();
    r3::tune::check_originals(options.tune_file);
    return r3::exit_ok;
  }
  return r3::exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  r3::World world(argc, argv);

  Options options;
  CLI::App app{
      "r3-mpi: tune the kernels named in tune.yaml. Rank 0 searches; ranks 1..N-1 "
      "replay candidates, one per GPU. Run as e.g. 'srun -n 65 r3-mpi tune.yaml'."};
  app.name("r3-mpi");
  app.set_version_flag("--version", r3::build_description());
  app.add_option("tune_file", options.tune_file, "The tuning configuration (tune.yaml)")
      ->required();
  app.add_flag("--resume", options.resume,
               "Continue the run recorded in the run database (output.run_database)");
  app.add_flag("--resume-if-present", options.resume_if_present,
               "Continue the run database if there is one, start a new run otherwise (for batch "
               "jobs that may be requeued)")
      ->excludes("--resume");
  app.add_flag("--dry-run", options.dry_run,
               "Check tune.yaml against its capture, print the resolved configuration, then "
               "compile and verify each kernel's original (the recorded code, and its source at "
               "its defaults) in a sandbox on this rank, and say what the built-in mutators make "
               "of each kernel's source");
  app.add_flag_callback(
      "--keys",
      [&world] {
        if (world.rank() == 0) {
          std::cout << "| key | type | default | meaning |\n| --- | --- | --- | --- |\n";
          for (const r3::config::KeyDescription& key : r3::config::describe_keys())
            std::cout << "| `" << key.key << "` | " << key.type << " | " << key.default_value
                      << " | " << key.doc << " |\n";
        }
        throw CLI::Success();
      },
      "Print every key tune.yaml accepts, with its type, default and meaning, and exit "
      "(docs/tune-yaml.md says more)");
  app.add_option("--log-level", options.log_level,
                 "error, warning, info, debug or trace (or R3_LOG_LEVEL)")
      ->check(CLI::IsMember({"error", "warning", "info", "debug", "trace"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::ostringstream quiet;
    int status = world.rank() == 0 ? app.exit(e) : app.exit(e, quiet, quiet);
    return status == 0 ? r3::exit_ok : r3::exit_usage;
  }
  if (!options.log_level.empty()) r3::log::set_level(*r3::log::parse_level(options.log_level));

  if (!options.dry_run)
    return r3::tune::run_job({options.tune_file, options.resume, options.resume_if_present}, world);

  int status = r3::exit_ok;
  if (world.rank() == 0) {
    try {
      status = check_configuration(options, world.size());
    } catch (...) {
      status = r3::exit_status_of_current_exception();
    }
  }
  return world.broadcast(status);
}
