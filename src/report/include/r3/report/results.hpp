// The results directory of a tuning run, written from its run database alone (by r3-mpi at the
// end of a session and by `r3 report RUN.h5`):
//   report.html           self-contained (inline SVG, no scripts, nothing fetched)
//   candidates.csv        every candidate, one row each
//   confirmations.csv     every re-measurement of the winner confirmation
//   <kernel>/<source>     the winner's source, named as the original file
//   <kernel>/best.diff    unified diff against the original (patch -p1 in the source's
//                         directory, or where its first line says)
//   <kernel>/best.yaml    the winner's configuration as tune.yaml (`r3 replay --config` replays it)
//   <kernel>/best.code    the winner's compiled code as it was confirmed (CUDA: best.cubin
//                         beside it), what `r3 apply` loads; only when the run kept it
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "r3/config/tune_config.hpp"
#include "r3/report/analysis.hpp"
#include "r3/run_database.hpp"

namespace r3::report {

struct KernelFiles {
  std::string name;
  std::filesystem::path source;    // empty when the kernel has no source in tune.yaml
  std::filesystem::path diff;      // empty when the winner's source is the original
  std::filesystem::path fragment;  // empty when no candidate verified
  std::filesystem::path code;      // best.code; empty when the run kept no code of the winner
};

struct ResultsFiles {
  std::filesystem::path directory;
  std::filesystem::path report;
  std::filesystem::path candidates_csv;
  std::filesystem::path confirmations_csv;
  std::vector<KernelFiles> kernels;
  std::vector<KernelResult> results;  // the analysis the files show; points into the record
};

// Writes (or overwrites) the results of `record` under `directory`; `record` must outlive the
// returned analysis. Throws IoError naming the file that could not be written, ConfigError when
// the stored tune.yaml no longer parses.
ResultsFiles write_results(const run::RunRecord& record, const std::filesystem::path& directory);

// tune.yaml's kernel names, in order; from the text stored in the run database.
std::vector<std::string> kernel_names(const config::TuneConfig& config);
std::vector<std::string> kernel_names(const run::RunRecord& record);

// One line per kernel, for the end of a job: "stencil2d: 1.31x confirmed (1.25-1.36, 6 pairs on 2
// evaluators), 0.174 ms -> 0.133 ms, candidate 57 (compiler: opt=2 ...)".
std::vector<std::string> summary_lines(const std::vector<KernelResult>& results);

}  // namespace r3::report
