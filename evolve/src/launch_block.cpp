#include "r3/evolve/launch_block.hpp"

#include <cctype>

namespace r3::evolve {
namespace {

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// expression := term (('+' | '-') term)*; term := factor (('*' | '/') factor)*;
// factor := integer | name | '(' expression ')' | '-' factor
class SizeParser {
 public:
  SizeParser(std::string_view text, const std::map<std::string, std::string>& values,
             int depth = 0)
      : text_(text), values_(values), depth_(depth) {}

  std::optional<std::int64_t> parse() {
    auto value = expression();
    skip_space();
    if (!value || at_ != text_.size()) return std::nullopt;
    return value;
  }

 private:
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool take(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) return ++at_, true;
    return false;
  }
  std::optional<std::int64_t> expression() {
    auto value = term();
    while (value) {
      if (take('+')) {
        auto right = term();
        value = right ? std::optional(*value + *right) : std::nullopt;
      } else if (take('-')) {
        auto right = term();
        value = right ? std::optional(*value - *right) : std::nullopt;
      } else {
        break;
      }
    }
    return value;
  }
  std::optional<std::int64_t> term() {
    auto value = factor();
    while (value) {
      if (take('*')) {
        auto right = factor();
        value = right ? std::optional(*value * *right) : std::nullopt;
      } else if (take('/')) {
        auto right = factor();
        value = right && *right != 0 ? std::optional(*value / *right) : std::nullopt;
      } else {
        break;
      }
    }
    return value;
  }
  // Nesting (parentheses, names whose values name others) is bounded: a value that names
  // itself is not a size.
  std::optional<std::int64_t> factor() {
    if (depth_ > 64) return std::nullopt;
    ++depth_;
    auto value = nested_factor();
    --depth_;
    return value;
  }
  std::optional<std::int64_t> nested_factor() {
    if (take('(')) {
      auto value = expression();
      return value && take(')') ? value : std::nullopt;
    }
    if (take('-')) {
      auto value = factor();
      return value ? std::optional(-*value) : std::nullopt;
    }
    skip_space();
    const std::size_t begin = at_;
    while (at_ < text_.size() && identifier_char(text_[at_])) ++at_;
    const std::string word(text_.substr(begin, at_ - begin));
    if (word.empty()) return std::nullopt;
    if (std::isdigit(static_cast<unsigned char>(word[0]))) return number(word);
    auto it = values_.find(word);
    if (it == values_.end()) return std::nullopt;
    // A value may itself be an expression of others (BLOCK 2*TILE).
    return SizeParser(it->second, values_, depth_ + 1).parse();
  }
  static std::optional<std::int64_t> number(const std::string& word) {
    std::size_t digits = 0;
    while (digits < word.size() && std::isdigit(static_cast<unsigned char>(word[digits]))) ++digits;
    // Integer suffixes (16u, 16L) are allowed; anything else is not a size.
    for (char c : word.substr(digits))
      if (c != 'u' && c != 'U' && c != 'l' && c != 'L') return std::nullopt;
    if (digits > 15) return std::nullopt;
    return std::stoll(word.substr(0, digits));
  }

  std::string_view text_;
  const std::map<std::string, std::string>& values_;
  std::size_t at_ = 0;
  int depth_ = 0;
};

}  // namespace

std::optional<BlockExpressions> parse_launch_block(std::string_view source) {
  constexpr std::string_view kMacro = "R3_LAUNCH_BLOCK(";
  for (std::size_t at = 0; (at = source.find(kMacro, at)) != std::string_view::npos;
       at += kMacro.size()) {
    if (at > 0 && identifier_char(source[at - 1])) continue;
    // The arguments up to the matching ')', split at top-level commas.
    BlockExpressions block;
    std::size_t argument = 0;
    int depth = 0;
    bool closed = false, valid = true;
    for (std::size_t i = at + kMacro.size(); i < source.size() && !closed; ++i) {
      const char c = source[i];
      if (c == '(') ++depth;
      if (c == ')' && depth-- == 0) {
        closed = true;
        break;
      }
      if (c == ',' && depth == 0) {
        if (++argument > 2) valid = false;
        continue;
      }
      if (c == '\n') valid = false;
      if (argument <= 2) block[argument] += c;
    }
    if (!closed || !valid || argument != 2) continue;  // "#define R3_LAUNCH_BLOCK(...)"
    for (std::string& e : block) {
      e.erase(0, e.find_first_not_of(" \t"));
      e.erase(e.find_last_not_of(" \t") + 1);
    }
    if (block[0].empty() || block[1].empty() || block[2].empty()) continue;
    return block;
  }
  return std::nullopt;
}

bool keeps_recorded_grid(std::string_view source) {
  const std::string_view declaration = kKeepGridDeclaration;
  for (std::size_t at = source.find(declaration); at != std::string_view::npos;
       at = source.find(declaration, at + 1))
    if (at == 0 || !identifier_char(source[at - 1])) return true;
  return false;
}

std::optional<std::int64_t> evaluate_size(std::string_view expression,
                                          const std::map<std::string, std::string>& values) {
  return SizeParser(expression, values).parse();
}

std::vector<std::string> names_in(std::string_view expression) {
  std::vector<std::string> names;
  for (std::size_t at = 0; at < expression.size();) {
    if (!identifier_char(expression[at])) {
      ++at;
      continue;
    }
    const std::size_t begin = at;
    while (at < expression.size() && identifier_char(expression[at])) ++at;
    if (!std::isdigit(static_cast<unsigned char>(expression[begin])))
      names.emplace_back(expression.substr(begin, at - begin));
  }
  return names;
}

}  // namespace r3::evolve
