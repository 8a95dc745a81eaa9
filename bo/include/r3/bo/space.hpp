// Search spaces of kernel tuning: ordinal parameters (block sizes, tile sizes), categorical ones
// (compiler, flags), ordered sequences (LLVM pass pipelines), conditional parameters, and known
// constraints. Spaces are never enumerated: they are sampled and searched by neighbourhood.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "r3/bo/expression.hpp"
#include "r3/hash.hpp"

namespace r3::bo {

enum class Kind { ordinal, categorical, sequence };

struct Parameter {
  std::string name;
  Kind kind = Kind::ordinal;
  std::vector<double> numbers;          // ordinal: the allowed values, ascending
  std::vector<std::string> labels;      // categorical: the allowed values; ordinal: their text
  std::vector<std::string> pool;        // sequence: the items sequences are made of
  std::size_t max_length = 0;           // sequence: longest sequence (the shortest is empty)
  bool repeat = true;                   // sequence: may an item appear more than once
  std::optional<Expression> condition;  // the parameter is active only where this holds

  static Parameter ordinal(std::string name, std::vector<double> values);
  static Parameter categorical(std::string name, std::vector<std::string> labels);
  static Parameter sequence(std::string name, std::vector<std::string> pool, std::size_t max_length,
                            bool repeat);
  // Makes the parameter conditional, e.g. when("compiler == \"clang\"").
  Parameter& when(std::string_view condition);
  std::size_t choices() const;  // values of an ordinal or categorical parameter
};

// A number a known constraint bounds, over two or more ordinal parameters: "bx * by" of
// "bx * by <= 1024" (threads per block), "bk * (bm + bn) * 4" of a shared-memory limit. Such a
// limit is there because the quantity decides what the hardware does, and so often how fast the
// kernel runs; the surrogate sees it as an input of its own (Options::constraint_quantities),
// which no single parameter is.
struct Quantity {
  Expression expression;
  // The range it takes over every combination of its parameters' values, cut at the limit
  // the constraint sets ("<= 1024": at most 1024).
  double low = 0, high = 0;
  bool logarithmic = false;  // never negative: the surrogate sees log(1 + value)
};

// A point of a space: for each parameter, the index of its value (ordinal, categorical), or
// the indices of its items in the pool (sequence); empty when the parameter is inactive.
struct Configuration {
  std::vector<std::vector<int>> values;
  Hash128 hash() const;
  friend bool operator==(const Configuration&, const Configuration&) = default;
};

class Space {
 public:
  // `constraints` must hold for a configuration to be proposed; `constants` are further names
  // they may use (e.g. the problem size N). Conditions may refer only to earlier parameters.
  // Throws r3::Error for an expression that does not parse or names something unknown.
  explicit Space(std::vector<Parameter> parameters, std::vector<std::string> constraints = {},
                 std::map<std::string, double> constants = {});

  const std::vector<Parameter>& parameters() const { return parameters_; }
  std::optional<std::size_t> find(std::string_view name) const;

  // Structurally valid (indices in range, sequences within their limits, each parameter active
  // exactly where its condition holds) and every constraint holds.
  bool valid(const Configuration& configuration) const;
  bool satisfies_constraints(const Configuration& configuration) const;

  // A random valid configuration (each parameter uniform, rejection on the constraints).
  // Throws r3::Error when 10000 draws do not meet the constraints.
  Configuration sample(std::mt19937_64& rng) const;
  // The same within `attempts` draws; nullopt when none met the constraints.
  std::optional<Configuration> draw(std::mt19937_64& rng, std::size_t attempts) const;
  // The configuration that puts each parameter at the given fractions of its range (one
  // coordinate per parameter, in [0, 1)): how space-filling designs map into the space.
  // Sequences take their length from it and their items from `rng`.
  Configuration from_unit(const std::vector<double>& coordinates, std::mt19937_64& rng) const;
  // How far a configuration lies from such coordinates: the sum over parameters of how far
  // each value's place in its range (the middle of its stratum; a sequence's length) is from
  // the coordinate. A design point that breaks a constraint is repaired to the valid
  // configuration nearest to it by this measure.
  double distance_to_unit(const Configuration& configuration,
                          const std::vector<double>& coordinates) const;
  // The coordinates of the middle of every range: the middle value of an odd number of values,
  // the lower of the two middle ones of an even number (the first label of two), half the
  // longest sequence. from_unit maps them to those values (a sequence: at most that long).
  std::vector<double> centre_unit() const;

  // Configurations one step away: an ordinal value up or down, another categorical value, a
  // sequence item inserted, removed, replaced or swapped with its neighbour; only valid ones.
  // every_value: an ordinal parameter takes each of its other values, not only the next ones
  // (every configuration that changes one parameter, but for sequences' one-step moves).
  std::vector<Configuration> neighbours(const Configuration& configuration, std::mt19937_64& rng,
                                        bool every_value = false) const;

  // The value of a parameter for expressions: number, label, or a sequence's length.
  std::optional<Value> value(const Configuration& configuration, std::size_t parameter) const;
  // "bx=32 by=4 compiler=clang passes=[instcombine,licm]"
  std::string describe(const Configuration& configuration) const;
  // log10 of the number of points, conditions and constraints ignored (for messages).
  double log10_size() const;
  // Every valid configuration, in a fixed order, when the space has no sequence parameter and
  // at most `limit` points (conditions and constraints ignored); nullopt otherwise. Small
  // constrained spaces (block shapes) are drawn from this list instead of by rejection, which
  // gets slower the more of the space has been taken.
  std::optional<std::vector<Configuration>> enumerate(std::size_t limit) const;

  // The quantities the constraints bound (Quantity): from each comparison a constraint requires
  // (itself, or each of a conjunction's) between a side over two or more ordinal parameters and
  // constants and a side over constants alone; at most one per text.
  const std::vector<Quantity>& quantities() const { return quantities_; }
  // A quantity's value in a configuration; NaN where it needs an inactive parameter.
  double quantity(const Configuration& configuration, std::size_t k) const;

 private:
  bool condition_holds(const Configuration& configuration, std::size_t parameter) const;
  Expression::Lookup lookup(const Configuration& configuration) const;
  // Re-decides which parameters are active after `changed` changed; newly active ones get a
  // random value, inactive ones lose theirs.
  void settle(Configuration& configuration, std::size_t changed, std::mt19937_64& rng) const;
  std::vector<int> random_value(std::size_t parameter, std::mt19937_64& rng) const;

  std::vector<Parameter> parameters_;
  std::vector<Expression> constraints_;
  std::map<std::string, double> constants_;
  std::vector<Quantity> quantities_;  // space_quantities.cpp
  void find_quantities();
};

}  // namespace r3::bo
