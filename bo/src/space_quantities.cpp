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

double number_of(const Value& value) {
  const double* number = std::get_if<double>(&value);
  return number ? *number : std::numeric_limits<double>::quiet_NaN();
}

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
  auto constants = [&](const std::string& name) -> std::optional<Value> {
    if (auto it = constants_.find(name); it != constants_.end()) return it->second;
    return std::nullopt;
  };
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
        const double limit = number_of(other.evaluate(constants));
        if (std::isnan(limit)) continue;

        // Its range over every combination of its parameters' values (conditions and the other
        // constraints aside), then cut at the limit.
        const std::vector<std::size_t> order(used.begin(), used.end());
        std::vector<std::size_t> at(order.size(), 0);
        double low = std::numeric_limits<double>::infinity(), high = -low;
        for (std::size_t n = 0; n < combinations; ++n) {
          const Value value = side.evaluate([&](const std::string& name) -> std::optional<Value> {
            for (std::size_t k = 0; k < order.size(); ++k) {
              if (parameters_[order[k]].name == name) return parameters_[order[k]].numbers[at[k]];
            }
            return constants(name);
          });
          const double x = number_of(value);
          if (!std::isnan(x) && std::isfinite(x)) low = std::min(low, x), high = std::max(high, x);
          for (std::size_t k = 0; k < order.size(); ++k) {  // the next combination
            if (++at[k] < parameters_[order[k]].numbers.size()) break;
            at[k] = 0;
          }
        }
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
