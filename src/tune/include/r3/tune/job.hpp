// The tuning job of `r3-mpi tune.yaml` (DESIGN.md §3, §6): rank 0 searches and keeps the run
// database, ranks 1..N-1 evaluate candidates in sandboxes, one generation at a time. With one
// process, rank 0 does both.
#pragma once

#include <string>

#include "r3/tune/collectives.hpp"

namespace r3::tune {

struct JobOptions {
  std::string tune_file;
  bool resume = false;
  // Resume when the run database exists, start afresh otherwise (batch jobs that are requeued).
  bool resume_if_present = false;
};

// `r3-mpi --dry-run`, after the configuration was checked: compiles and verifies each kernel's
// original (the application's code as recorded, and its source at its defaults) in a sandbox of
// this process, and prints one line per original. Throws ConfigError naming the kernel, the
// compiler and the first diagnostic when one fails; returns quietly, saying why, when this
// process cannot run the backend (e.g. no GPU on a login node).
void check_originals(const std::string& tune_file);

// Runs the job on every rank (collective). Errors in the configuration, the capture or the LLM
// endpoint are found on rank 0 before any evaluation and end every rank with one message from
// rank 0; returns the exit status (0, or that of r3::exit_status_of_current_exception()).
int run_job(const JobOptions& options, const Collectives& world);

}  // namespace r3::tune
