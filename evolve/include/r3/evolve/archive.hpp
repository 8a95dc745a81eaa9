// The archive of the source search: a MAP-Elites grid per island — one elite (the fastest) per
// cell of bucketed behaviour descriptors (registers per thread, shared memory, code size, ...) —
// with migration between islands, and parent selection mixing elites and exploration. And the
// novelty filter that keeps duplicate and near-duplicate sources from being evaluated twice.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "r3/evolve/options.hpp"
#include "r3/hash.hpp"

namespace r3::evolve {

struct Elite {
  std::uint64_t id = 0;                     // the candidate
  Hash128 source;                           // its source's hash
  double time = 0;                          // seconds; lower is better
  std::map<std::string, double> behaviour;  // descriptor -> value
};

class Archive {
 public:
  // `descriptors` from: registers, shared_memory, code_size, spills, occupancy; `bins` per
  // descriptor; values outside a descriptor's range go to its first or last bin.
  Archive(std::vector<std::string> descriptors, std::size_t bins, std::size_t islands,
          std::size_t migration_interval = 0);
  // search.archive of tune.yaml.
  explicit Archive(const evolve::ArchiveOptions& config);

  // Offers an evaluated candidate to `island`; returns true when it became its cell's elite.
  bool add(std::size_t island, const Elite& candidate);
  // A parent for island `island`: with probability `exploration` any elite of the island, else
  // the winner of a tournament of three by time. Throws r3::Error for an empty island.
  const Elite& select_parent(std::size_t island, double exploration, std::mt19937_64& rng) const;
  // Each island's best elite is offered to the next island (a ring).
  void migrate();
  // Ends a generation; every migration_interval-th one (0: never) migrates. Returns whether it did.
  bool end_generation();
  std::size_t generation() const { return generation_; }

  std::size_t islands() const { return cells_.size(); }
  std::size_t size(std::size_t island) const { return cells_[island].size(); }
  const Elite* best() const;                                    // over all islands
  std::vector<std::size_t> cell(const Elite& candidate) const;  // its bins, one per descriptor

 private:
  std::vector<std::string> descriptors_;
  std::size_t bins_;
  std::size_t migration_interval_ = 0;
  std::size_t generation_ = 0;
  std::vector<std::map<std::vector<std::size_t>, Elite>> cells_;
};

class NoveltyFilter {
 public:
  enum class Verdict { novel, duplicate, near_duplicate };
  // Sources at least this similar to one already seen (Jaccard similarity of their token
  // 5-grams) are near-duplicates.
  explicit NoveltyFilter(double similarity_threshold);
  Verdict check(std::string_view source) const;
  void add(std::string_view source);
  // Without comments and whitespace: what "the same source" means.
  static std::string normalise(std::string_view source);

 private:
  static std::vector<std::uint64_t> shingles(std::string_view normalised_tokens);
  double threshold_;
  std::unordered_set<Hash128> exact_;
  std::vector<std::vector<std::uint64_t>> seen_;  // sorted shingle hashes per source
};

std::string_view to_string(NoveltyFilter::Verdict verdict);

}  // namespace r3::evolve
