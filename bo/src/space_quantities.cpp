// Space::quantities(): the numbers the known constraints bound, and the range each takes.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "r3/bo/space.hpp"

namespace r3::bo {
namespace {

// Combinations of a quantity's parameters' values evaluated for its range: beyond this many it
// is left out (a product of six 10-value parameters is already a million).
constexpr std::size_t kMostCombinations = 1 << 16;

// The comparison seen from the quantity's side: "c >= q" is "q <= c".
std::string facing_quantity(const std::string& op, bool quantity_on_left) {
  if (quantity_on_left) return op;
  if (op == "<=") return ">=";
  if (op == ">=") return "<=";
  if (op == "<") return ">";
  if (op == ">") return "<";
  return op;
}

}  // namespace

void Space::find_quantities() {
  auto parameters_in = [&](const Expression& e) {
    std::set<std::size_t> used;
    for (const std::string& name : e.names()) {
      if (auto index = find(name)) used.insert(*index);
    }
    return used;
  };
  // A configuration with only a quantity's parameters set, read through lookup(): the constants
  // and those parameters' values; nothing set, the constants alone.
  Configuration probe{std::vector<std::vector<int>>(parameters_.size())};
  const Expression::Lookup names = lookup(probe);
  std::set<std::string> seen;
  for (const Expression& constraint : constraints_) {
    for (const Expression::Comparison& comparison : constraint.comparisons()) {
      for (const bool left : {true, false}) {
        const Expression& side = left ? comparison.left : comparison.right;
        const Expression& other = left ? comparison.right : comparison.left;
        const std::set<std::size_t> used = parameters_in(side);
        if (used.size() < 2 || !parameters_in(other).empty() || seen.contains(side.text()))
          continue;
        const bool ordinal = std::all_of(used.begin(), used.end(), [&](std::size_t i) {
          return parameters_[i].kind == Kind::ordinal;
        });
        std::size_t combinations = 1;
        for (std::size_t i : used) {
          combinations *= parameters_[i].numbers.size();
          if (combinations > kMostCombinations) break;
        }
        if (!ordinal || combinations > kMostCombinations) continue;
        const double limit = number_of(other.evaluate(names));
        if (std::isnan(limit)) continue;

        // Its range over every combination of its parameters' values (conditions and the other
        // constraints aside), then cut at the limit.
        const std::vector<std::size_t> order(used.begin(), used.end());
        std::vector<std::size_t> at(order.size(), 0);
        double low = std::numeric_limits<double>::infinity(), high = -low;
        for (std::size_t n = 0; n < combinations; ++n) {
          for (std::size_t k = 0; k < order.size(); ++k)
            probe.values[order[k]] = {static_cast<int>(at[k])};
          const double x = number_of(side.evaluate(names));
          if (std::isfinite(x)) low = std::min(low, x), high = std::max(high, x);
          for (std::size_t k = 0; k < order.size(); ++k) {  // the next combination
            if (++at[k] < parameters_[order[k]].numbers.size()) break;
            at[k] = 0;
          }
        }
        for (std::size_t i : order) probe.values[i].clear();
        const std::string op = facing_quantity(comparison.op, left);
        if (op == "<=" || op == "<") high = std::min(high, limit);
        if (op == ">=" || op == ">") low = std::max(low, limit);
        if (op == "==" || !(high > low)) continue;  // a fixed number tells the model nothing
        seen.insert(side.text());
        quantities_.push_back(Quantity{side, low, high, low >= 0});
      }
    }
  }
}

double Space::quantity(const Configuration& configuration, std::size_t k) const {
  return number_of(quantities_.at(k).expression.evaluate(lookup(configuration)));
}

}  // namespace r3::bo
