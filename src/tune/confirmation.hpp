// The winner confirmation (DESIGN.md §6): the best candidates of each kernel and its original
// re-measured, interleaved, with more repetitions, on every evaluator, once the search ends.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dispatcher.hpp"
#include "master.hpp"

namespace r3::tune {

// What the winner confirmation of each kernel re-measures: its original (first), the rebuilt
// original (second, when there is one that is not the same code), then its fastest distinct
// verified candidates (by source and configuration; at most timing.confirm_top of them); none
// when the original did not verify or nothing else did. Kept up to date as candidates are
// committed: the budget asks what the confirmation costs at every proposal, and a set sorted
// afresh each time grew with the run.
class ConfirmationSets {
 public:
  ConfirmationSets(std::size_t kernels, std::size_t top) : kernels_(kernels), top_(top) {}
  // Takes in the candidates the record gained since the last call.
  void take(const run::RunRecord& record);
  // The set of a kernel: indices into record.candidates, in the order above.
  std::vector<std::size_t> set(const run::RunRecord& record, std::size_t kernel) const;

 private:
  using Key = std::pair<Hash128, std::string>;  // source, configuration
  struct Kernel {
    std::optional<std::size_t> original, rebuilt;
    std::map<Key, std::pair<double, std::size_t>> fastest;  // each key's (seconds, index)
    std::set<std::pair<double, std::size_t>> ranked;        // those, fastest first
  };
  std::vector<Kernel> kernels_;
  std::size_t top_;
  std::size_t taken_ = 0;
};

// Wall time the confirmation will take, from the measurements so far (each evaluator runs every
// re-measurement): the budget keeps it in reserve.
double confirmation_estimate(const Master& m, const ConfirmationSets& sets);

// Runs it and adds its measurements to m.record (committed by the caller). False when a signal
// stopped it: nothing of it is kept, and a resume runs it again.
bool confirm_winners(Master& m, Dispatcher& dispatcher);

}  // namespace r3::tune
