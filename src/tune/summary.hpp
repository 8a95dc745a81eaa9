// What the job prints: a line per committed generation, and the summary at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "master.hpp"
#include "r3/report/results.hpp"

namespace r3::tune {

// A short digest of a generation's candidates (ids, sources, plans): the same digest after a
// resume means the same proposals.
std::string batch_digest(const std::vector<Planned>& batch);

struct GenerationFigures {
  std::uint32_t generation = 0;
  std::size_t first = 0;        // its first candidate in the record
  double seconds = 0;           // since the previous generation was committed
  double busy_fraction = 0;     // of the evaluators, over those seconds
  double search_seconds = 0;    // rank 0's own time (proposals, observations, commit) over them
  double search_cpu_seconds = 0;  // its CPU time (less than the above where rank 0 shares a core)
  // That CPU time in its three parts: proposing (the search, mutations, plans), taking in the
  // results (observing, the record), and writing run.h5 (when this commit wrote it).
  double proposals_cpu_seconds = 0, results_cpu_seconds = 0, write_cpu_seconds = 0;
  std::size_t in_flight = 0;    // generations proposed and not yet committed, after this one
};

// The fastest verified sample and the original of each kernel, taken in one generation at a
// time: what the progress lines show, as report::analyse finds them (the first of equally fast
// samples, the first original that verified), without analysing the whole record at every
// commit, which grew with the run.
class KernelBests {
 public:
  explicit KernelBests(std::size_t kernels) : kernels_(kernels) {}
  // Takes in the candidates the record gained since the last call.
  void take(const run::RunRecord& record);
  struct Kernel {
    std::optional<std::size_t> best, original;  // indices into record.candidates
  };
  const std::vector<Kernel>& kernels() const { return kernels_; }

 private:
  std::vector<Kernel> kernels_;
  std::size_t taken_ = 0;
};

// "generation 12: 8 candidates, 7 ok, 1 failed (1 timeout); best ...; evaluators busy 97%;
// 1.2 s; search 4.1 ms (CPU 3.9 ms: proposals 3.1, results 0.5, run.h5 0.3), 2 generation(s) in
// flight".
std::string progress_line(const Master& m, const GenerationFigures& figures,
                          const KernelBests& bests, const std::vector<double>& latencies);

// The summary at the end of the job.
std::string final_summary(const Master& m, const std::string& stop_reason,
                          const report::ResultsFiles& files, bool stopped);

}  // namespace r3::tune
