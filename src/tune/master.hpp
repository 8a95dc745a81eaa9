// Rank 0's state for the whole job, and how it is set up: tune.yaml read and checked against the
// capture and this build, the kernels resolved (sources read, application files cut to their
// kernel), the run database locked and, on --resume, replayed into the search.
#pragma once

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "llm_worker.hpp"
#include "protocol.hpp"
#include "r3/capture.hpp"
#include "r3/config/tune_config.hpp"
#include "r3/database_lock.hpp"
#include "r3/run_database.hpp"
#include "r3/tune/job.hpp"
#include "search.hpp"

namespace r3::tune {

struct Master {
  std::unique_ptr<run::DatabaseLock> lock;  // held for the whole job
  config::TuneConfig config;
  config::Backend backend = config::Backend::host;  // whose search runs (never simulate)
  std::unique_ptr<capture::CaptureReader> capture;
  std::unique_ptr<Search> search;
  std::unique_ptr<LlmWorker> llm;
  run::RunRecord record;
  std::filesystem::path database;
  run::DatabaseWriter database_writer;  // commits `record` to `database`, adding what it gained
  // Generations a resumed run's search proposed again that run.h5 has no results for: they are
  // evaluated first, as the uninterrupted run would have.
  std::vector<std::vector<Planned>> restored_in_flight;
  // Per kernel, its parameters' names in its source (empty without one): regions named after
  // what reaches them ("arg2") are shown as the source names them ("C").
  std::vector<std::vector<std::string>> parameter_names;
};

// Reads and checks everything; with `dry_run`, stops before the run database is touched.
// Throws ConfigError (file:line:col:key) or UsageError.
std::unique_ptr<Master> set_up_master(const JobOptions& options, int world_size,
                                      bool dry_run = false);

// What every evaluator needs to set up its sandbox.
protocol::EvaluatorSetup evaluator_setup(const Master& m);

// The first line of a compiler's or verifier's message that names an error, else its first line.
std::string first_diagnostic(const std::string& message);

}  // namespace r3::tune
