// Expressions over tuning parameters, for known constraints ("bx*by*bz <= 1024",
// "N % TILE == 0") and for the conditions of conditional parameters ("compiler == \"clang\"").
// Numbers, names, string literals, + - * / %, comparisons, && || !, parentheses.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace r3::bo {

// A value during evaluation: a number, or a string (a categorical label).
using Value = std::variant<double, std::string>;
// The number a value holds; NaN for a string or a missing value.
double number_of(const Value& value);

class Expression {
 public:
  // Throws r3::Error naming the position for text that does not parse.
  static Expression parse(std::string_view text);

  // `lookup(name)` returns the value of a name, or nullopt when it has none (an inactive
  // parameter): a comparison involving it is then false. Callers check names() beforehand.
  using Lookup = std::function<std::optional<Value>(const std::string& name)>;
  bool holds(const Lookup& lookup) const;
  Value evaluate(const Lookup& lookup) const;

  const std::string& text() const { return text_; }
  // Every name the expression refers to.
  std::vector<std::string> names() const;

  // What the expression requires, as comparisons: itself when it is one, or each comparison of
  // a conjunction at its top ("bx*by <= 1024 && bk*bm <= 4096"); nothing for anything else.
  struct Comparison;
  std::vector<Comparison> comparisons() const;

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

struct Expression::Comparison {
  Expression left;
  std::string op;  // <= < >= > == !=
  Expression right;
};

}  // namespace r3::bo
