#include "r3/evolve/archive.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "r3/error.hpp"

namespace r3::evolve {
namespace {

struct Range {
  double low, high;
  bool logarithmic;
};

// The scale of each descriptor (per thread or per block, as ptxas reports them).
Range range_of(const std::string& descriptor) {
  if (descriptor == "registers") return {8, 256, true};
  if (descriptor == "shared_memory") return {1, 228 * 1024, true};
  if (descriptor == "code_size") return {256, 256 * 1024, true};
  if (descriptor == "spills") return {1, 4096, true};
  if (descriptor == "occupancy") return {0, 1, false};
  throw Error("unknown behaviour descriptor '" + descriptor + "'");
}

}  // namespace

Archive::Archive(std::vector<std::string> descriptors, std::size_t bins, std::size_t islands,
                 std::size_t migration_interval)
    : descriptors_(std::move(descriptors)),
      bins_(std::max<std::size_t>(1, bins)),
      migration_interval_(migration_interval),
      cells_(std::max<std::size_t>(1, islands)) {
  for (const std::string& d : descriptors_) range_of(d);  // refuse unknown ones now
}

Archive::Archive(const evolve::ArchiveOptions& config)
    : Archive(config.descriptors, config.bins, config.islands, config.migration_interval) {}

bool Archive::end_generation() {
  ++generation_;
  if (migration_interval_ == 0 || cells_.size() < 2 || generation_ % migration_interval_ != 0)
    return false;
  migrate();
  return true;
}
std::vector<std::size_t> Archive::cell(const Elite& candidate) const {
  std::vector<std::size_t> bins;
  for (const std::string& d : descriptors_) {
    const Range r = range_of(d);
    auto it = candidate.behaviour.find(d);
    double v = it == candidate.behaviour.end() ? r.low : it->second;
    double position;
    if (r.logarithmic) {
      position = std::log(std::max(v, r.low) / r.low) / std::log(r.high / r.low);
    } else {
      position = (v - r.low) / (r.high - r.low);
    }
    position = std::clamp(position, 0.0, 1.0);
    bins.push_back(
        std::min(bins_ - 1, static_cast<std::size_t>(position * static_cast<double>(bins_))));
  }
  return bins;
}

bool Archive::add(std::size_t island, const Elite& candidate) {
  auto& cells = cells_.at(island);
  auto [it, inserted] = cells.emplace(cell(candidate), candidate);
  if (inserted) return true;
  if (candidate.time < it->second.time) {
    it->second = candidate;
    return true;
  }
  return false;
}

const Elite& Archive::select_parent(std::size_t island, double exploration,
                                    std::mt19937_64& rng) const {
  const auto& cells = cells_.at(island);
  if (cells.empty())
    throw Error("select_parent: island " + std::to_string(island) + " has no elite yet");
  std::vector<const Elite*> elites;
  for (const auto& [key, elite] : cells) elites.push_back(&elite);
  std::uniform_int_distribution<std::size_t> any(0, elites.size() - 1);
  if (std::bernoulli_distribution(exploration)(rng)) return *elites[any(rng)];
  const Elite* winner = elites[any(rng)];
  for (int round = 1; round < 3; ++round) {
    const Elite* challenger = elites[any(rng)];
    if (challenger->time < winner->time) winner = challenger;
  }
  return *winner;
}

void Archive::migrate() {
  std::vector<const Elite*> best(cells_.size(), nullptr);
  for (std::size_t i = 0; i < cells_.size(); ++i) {
    for (const auto& [key, elite] : cells_[i]) {
      if (best[i] == nullptr || elite.time < best[i]->time) best[i] = &elite;
    }
  }
  std::vector<Elite> moving;
  for (const Elite* e : best) moving.push_back(e != nullptr ? *e : Elite{});
  for (std::size_t i = 0; i < cells_.size(); ++i) {
    if (best[i] != nullptr) add((i + 1) % cells_.size(), moving[i]);
  }
}

const Elite* Archive::best() const {
  const Elite* best = nullptr;
  for (const auto& island : cells_) {
    for (const auto& [key, elite] : island) {
      if (best == nullptr || elite.time < best->time) best = &elite;
    }
  }
  return best;
}

NoveltyFilter::NoveltyFilter(double similarity_threshold) : threshold_(similarity_threshold) {}

std::string NoveltyFilter::normalise(std::string_view s) {
  // Comments out, string and character literals kept, white space kept (as one space) only where
  // it separates characters that would otherwise join into other tokens ("a b", "- -"), and
  // line breaks kept where they end a preprocessor directive.
  auto word = [](char x) { return std::isalnum(static_cast<unsigned char>(x)) || x == '_'; };
  auto joins = [&](char a, char b) {
    constexpr std::string_view kOperators = "+-*/%&|^<>=!:.#";
    return (word(a) && word(b)) || (kOperators.find(a) != std::string_view::npos &&
                                    kOperators.find(b) != std::string_view::npos);
  };
  std::string out;
  bool pending_space = false, line_start = true, in_directive = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i + 1 < s.size() && s[i + 1] != '\n') ++i;
      pending_space = true;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const std::size_t end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? s.size() : end + 1;
      pending_space = true;
      continue;
    }
    if (c == '\\' && i + 1 < s.size() && s[i + 1] == '\n') {  // a continued line
      ++i;
      pending_space = true;
      continue;
    }
    if (c == '\n') {
      if (in_directive) out += '\n';
      in_directive = false;
      pending_space = !out.empty() && out.back() != '\n';
      line_start = true;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      pending_space = true;
      continue;
    }
    if (c == '#' && line_start) {
      if (!out.empty() && out.back() != '\n') out += '\n';
      in_directive = true;
      pending_space = false;
    }
    line_start = false;
    if (pending_space && !out.empty() && joins(out.back(), c)) out += ' ';
    pending_space = false;
    if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      while (j < s.size() && s[j] != c && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      j = std::min(j, s.size() - 1);
      out.append(s.substr(i, j - i + 1));
      i = j;
      continue;
    }
    out += c;
  }
  return out;
}

std::vector<std::uint64_t> NoveltyFilter::shingles(std::string_view text) {
  std::vector<std::string> tokens;
  std::string current;
  auto word = [](char x) { return std::isalnum(static_cast<unsigned char>(x)) || x == '_'; };
  for (char c : text) {
    if (word(c)) {
      current += c;
      continue;
    }
    if (!current.empty()) tokens.push_back(current);
    current.clear();
    if (!std::isspace(static_cast<unsigned char>(c))) tokens.emplace_back(1, c);
  }
  if (!current.empty()) tokens.push_back(current);
  std::vector<std::uint64_t> out;
  constexpr std::size_t k = 5;
  for (std::size_t i = 0; i + k <= std::max(tokens.size(), k); ++i) {
    Hasher h;
    for (std::size_t j = i; j < std::min(i + k, tokens.size()); ++j) h.update_field(tokens[j]);
    out.push_back(h.digest().low);
    if (tokens.size() < k) break;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

NoveltyFilter::Verdict NoveltyFilter::check(std::string_view source) const {
  const std::string normal = normalise(source);
  if (exact_.contains(hash_string(normal))) return Verdict::duplicate;
  const std::vector<std::uint64_t> mine = shingles(normal);
  for (const auto& other : seen_) {
    std::size_t common = 0, i = 0, j = 0;
    while (i < mine.size() && j < other.size()) {
      if (mine[i] == other[j]) {
        ++common;
        ++i;
        ++j;
      } else if (mine[i] < other[j]) {
        ++i;
      } else {
        ++j;
      }
    }
    const std::size_t all = mine.size() + other.size() - common;
    if (all > 0 && static_cast<double>(common) / static_cast<double>(all) >= threshold_) {
      return Verdict::near_duplicate;
    }
  }
  return Verdict::novel;
}

void NoveltyFilter::add(std::string_view source) {
  const std::string normal = normalise(source);
  if (exact_.insert(hash_string(normal)).second) seen_.push_back(shingles(normal));
}

std::string_view to_string(NoveltyFilter::Verdict verdict) {
  switch (verdict) {
    case NoveltyFilter::Verdict::novel:
      return "novel";
    case NoveltyFilter::Verdict::duplicate:
      return "duplicate";
    case NoveltyFilter::Verdict::near_duplicate:
      return "near-duplicate";
  }
  return "?";
}

}  // namespace r3::evolve
