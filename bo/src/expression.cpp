#include "r3/bo/expression.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include "r3/error.hpp"

namespace r3::bo {

struct Expression::Node {
  enum class Kind { number, string, name, unary, binary } kind;
  double number = 0;
  std::string text;  // string literal, name, or operator
  std::shared_ptr<const Node> left, right;
};

namespace {

using Node = Expression::Node;
using NodePtr = std::shared_ptr<const Node>;

// A missing value (inactive parameter): NaN makes every comparison with it false.
constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

// The comparison operators, longest first where one begins another (the parser tries them in
// this order).
constexpr const char* kComparisons[] = {"<=", ">=", "==", "!=", "<", ">"};

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  NodePtr parse() {
    NodePtr node = parse_or();
    skip_space();
    if (at_ < text_.size()) fail("unexpected '" + std::string(1, text_[at_]) + "'");
    return node;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw Error("expression '" + std::string(text_) + "': " + message + " at column " +
                std::to_string(at_ + 1));
  }
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool accept(std::string_view token) {
    skip_space();
    if (text_.substr(at_, token.size()) != token) return false;
    // "<" must not match the start of "<=", "=" is never an operator on its own.
    if ((token == "<" || token == ">" || token == "!") && at_ + 1 < text_.size() &&
        text_[at_ + 1] == '=') {
      return false;
    }
    at_ += token.size();
    return true;
  }
  static NodePtr binary(std::string op, NodePtr left, NodePtr right) {
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::binary;
    node->text = std::move(op);
    node->left = std::move(left);
    node->right = std::move(right);
    return node;
  }
  NodePtr parse_or() {
    NodePtr left = parse_and();
    while (accept("||")) left = binary("||", left, parse_and());
    return left;
  }
  NodePtr parse_and() {
    NodePtr left = parse_comparison();
    while (accept("&&")) left = binary("&&", left, parse_comparison());
    return left;
  }
  NodePtr parse_comparison() {
    NodePtr left = parse_sum();
    for (const char* op : kComparisons) {
      if (accept(op)) return binary(op, left, parse_sum());
    }
    return left;
  }
  NodePtr parse_sum() {
    NodePtr left = parse_product();
    while (true) {
      if (accept("+")) {
        left = binary("+", left, parse_product());
      } else if (accept("-")) {
        left = binary("-", left, parse_product());
      } else {
        return left;
      }
    }
  }
  NodePtr parse_product() {
    NodePtr left = parse_unary();
    while (true) {
      if (accept("*")) {
        left = binary("*", left, parse_unary());
      } else if (accept("/")) {
        left = binary("/", left, parse_unary());
      } else if (accept("%")) {
        left = binary("%", left, parse_unary());
      } else {
        return left;
      }
    }
  }
  NodePtr parse_unary() {
    for (const char* op : {"!", "-"}) {
      if (accept(op)) {
        auto node = std::make_shared<Node>();
        node->kind = Node::Kind::unary;
        node->text = op;
        node->left = parse_unary();
        return node;
      }
    }
    return parse_primary();
  }
  NodePtr parse_primary() {
    skip_space();
    if (at_ >= text_.size()) fail("expression ends too early");
    auto node = std::make_shared<Node>();
    char c = text_[at_];
    if (c == '(') {
      ++at_;
      NodePtr inner = parse_or();
      if (!accept(")")) fail("missing ')'");
      return inner;
    }
    if (c == '"' || c == '\'') {
      std::size_t end = text_.find(c, at_ + 1);
      if (end == std::string_view::npos) fail("unterminated string");
      node->kind = Node::Kind::string;
      node->text = std::string(text_.substr(at_ + 1, end - at_ - 1));
      at_ = end + 1;
      return node;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      double value = 0;
      auto [end, ec] = std::from_chars(text_.data() + at_, text_.data() + text_.size(), value);
      if (ec != std::errc()) fail("bad number");
      node->kind = Node::Kind::number;
      node->number = value;
      at_ = static_cast<std::size_t>(end - text_.data());
      return node;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t start = at_;
      while (at_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) {
        ++at_;
      }
      node->kind = Node::Kind::name;
      node->text = std::string(text_.substr(start, at_ - start));
      if (node->text == "true" || node->text == "false") {
        node->kind = Node::Kind::number;
        node->number = node->text == "true" ? 1 : 0;
      }
      return node;
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

bool truthy(const Value& value) {
  const double number = number_of(value);
  return !std::isnan(number) && number != 0;
}

Value evaluate_node(const Node& node, const Expression::Lookup& lookup) {
  switch (node.kind) {
    case Node::Kind::number:
      return node.number;
    case Node::Kind::string:
      return node.text;
    case Node::Kind::name: {
      std::optional<Value> value = lookup(node.text);
      return value ? *value : Value(kMissing);
    }
    case Node::Kind::unary: {
      Value operand = evaluate_node(*node.left, lookup);
      if (node.text == "!") return truthy(operand) ? 0.0 : 1.0;
      return -number_of(operand);
    }
    case Node::Kind::binary:
      break;
  }
  const std::string& op = node.text;
  if (op == "&&")
    return truthy(evaluate_node(*node.left, lookup)) && truthy(evaluate_node(*node.right, lookup))
               ? 1.0
               : 0.0;
  if (op == "||")
    return truthy(evaluate_node(*node.left, lookup)) || truthy(evaluate_node(*node.right, lookup))
               ? 1.0
               : 0.0;
  Value left = evaluate_node(*node.left, lookup);
  Value right = evaluate_node(*node.right, lookup);
  if (op == "==" || op == "!=") {
    bool equal;
    if (left.index() != right.index()) {
      equal = false;
    } else if (const auto* text = std::get_if<std::string>(&left)) {
      equal = *text == std::get<std::string>(right);
    } else {
      equal = number_of(left) == number_of(right);  // NaN: never equal
    }
    bool missing = std::isnan(number_of(left)) && left.index() == 0;
    missing = missing || (std::isnan(number_of(right)) && right.index() == 0);
    if (missing) return 0.0;  // anything involving an inactive parameter is false
    return (op == "==") == equal ? 1.0 : 0.0;
  }
  const double a = number_of(left), b = number_of(right);
  if (op == "<") return a < b ? 1.0 : 0.0;
  if (op == "<=") return a <= b ? 1.0 : 0.0;
  if (op == ">") return a > b ? 1.0 : 0.0;
  if (op == ">=") return a >= b ? 1.0 : 0.0;
  if (op == "+") return a + b;
  if (op == "-") return a - b;
  if (op == "*") return a * b;
  if (op == "/") return b == 0 ? kMissing : a / b;
  if (op == "%") return b == 0 ? kMissing : std::fmod(a, b);
  return kMissing;
}

void collect_names(const Node& node, std::vector<std::string>& names) {
  if (node.kind == Node::Kind::name) names.push_back(node.text);
  if (node.left) collect_names(*node.left, names);
  if (node.right) collect_names(*node.right, names);
}

// The text of a node: names, numbers and operators as written, every operation in parentheses
// but the outermost (messages only; parsing it again gives the same tree).
std::string text_of(const Node& node, bool outermost) {
  switch (node.kind) {
    case Node::Kind::number: {
      std::ostringstream out;
      out << node.number;
      return out.str();
    }
    case Node::Kind::string:
      return "\"" + node.text + "\"";
    case Node::Kind::name:
      return node.text;
    case Node::Kind::unary:
      return node.text + text_of(*node.left, false);
    case Node::Kind::binary:
      break;
  }
  std::string text =
      text_of(*node.left, false) + " " + node.text + " " + text_of(*node.right, false);
  return outermost ? text : "(" + text + ")";
}

void collect_comparisons(const NodePtr& node, std::vector<NodePtr>& out) {
  if (node->kind != Node::Kind::binary) return;
  if (node->text == "&&") {
    collect_comparisons(node->left, out);
    collect_comparisons(node->right, out);
    return;
  }
  for (const char* op : kComparisons) {
    if (node->text == op) out.push_back(node);
  }
}

}  // namespace

double number_of(const Value& value) {
  if (const double* number = std::get_if<double>(&value)) return *number;
  return kMissing;  // a string where a number is needed
}

Expression Expression::parse(std::string_view text) {
  Expression expression;
  expression.text_ = std::string(text);
  expression.root_ = Parser(text).parse();
  return expression;
}

Value Expression::evaluate(const Lookup& lookup) const { return evaluate_node(*root_, lookup); }

bool Expression::holds(const Lookup& lookup) const { return truthy(evaluate(lookup)); }

std::vector<std::string> Expression::names() const {
  std::vector<std::string> names;
  if (root_) collect_names(*root_, names);
  return names;
}

std::vector<Expression::Comparison> Expression::comparisons() const {
  std::vector<NodePtr> nodes;
  if (root_) collect_comparisons(root_, nodes);
  auto side = [](const NodePtr& node) {
    Expression e;
    e.text_ = text_of(*node, true);
    e.root_ = node;
    return e;
  };
  std::vector<Comparison> out;
  for (const NodePtr& node : nodes)
    out.push_back(Comparison{side(node->left), node->text, side(node->right)});
  return out;
}

}  // namespace r3::bo
