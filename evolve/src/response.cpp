#include "r3/evolve/response.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

namespace r3::evolve {
namespace {

std::string collapse_whitespace(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

std::string trim(std::string_view text) {
  std::size_t begin = text.find_first_not_of(" \t\r");
  std::size_t end = text.find_last_not_of(" \t\r");
  return begin == std::string_view::npos ? "" : std::string(text.substr(begin, end - begin + 1));
}

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Where `entry` is defined: the name followed by '(' ... ')' and then '{' (not a call).
std::optional<std::pair<std::size_t, std::size_t>> find_definition(std::string_view s,
                                                                   std::string_view entry) {
  std::size_t at = 0;
  while ((at = s.find(entry, at)) != std::string_view::npos) {
    const std::size_t name = at;
    at += entry.size();
    if (name > 0 && is_identifier_char(s[name - 1])) continue;
    if (at < s.size() && is_identifier_char(s[at])) continue;
    std::size_t open = s.find_first_not_of(" \t\r\n", at);
    if (open == std::string_view::npos || s[open] != '(') continue;
    int depth = 0;
    std::size_t close = open;
    for (; close < s.size(); ++close) {
      if (s[close] == '(') ++depth;
      if (s[close] == ')' && --depth == 0) break;
    }
    if (close >= s.size()) return std::nullopt;
    std::size_t after = s.find_first_not_of(" \t\r\n", close + 1);
    if (after == std::string_view::npos || s[after] != '{') continue;
    // The declaration starts after the previous ';', '}' or preprocessor line.
    std::size_t start = s.find_last_of(";}\n", name);
    while (start != std::string_view::npos && s[start] == '\n') {
      if (start == 0) break;  // the first line of the text: nothing comes before it
      std::size_t line = s.rfind('\n', start - 1);
      std::string_view previous = s.substr(line == std::string_view::npos ? 0 : line + 1,
                                           start - (line == std::string_view::npos ? 0 : line + 1));
      std::string t = trim(previous);
      if (t.empty() || t[0] == '#' || t.back() == ';' || t.back() == '}' || t.rfind("//", 0) == 0)
        break;
      start = line;
    }
    return std::make_pair(start == std::string_view::npos ? 0 : start + 1, close + 1);
  }
  return std::nullopt;
}

}  // namespace

ParsedResponse parse_response(std::string_view text, std::string_view entry) {
  ParsedResponse parsed;
  // SEARCH/REPLACE blocks first.
  std::vector<std::string> lines = lines_of(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (trim(lines[i]).rfind("<<<<<<< SEARCH", 0) != 0) continue;
    Edit edit;
    std::size_t k = i + 1;
    std::vector<std::string> search, replace;
    for (; k < lines.size() && trim(lines[k]) != "======="; ++k) search.push_back(lines[k]);
    std::size_t r = k + 1;
    for (; r < lines.size() && trim(lines[r]).rfind(">>>>>>> REPLACE", 0) != 0; ++r)
      replace.push_back(lines[r]);
    if (k >= lines.size() || r >= lines.size()) break;  // an unterminated block is not an edit
    for (std::size_t j = 0; j < search.size(); ++j)
      edit.search += search[j] + (j + 1 < search.size() ? "\n" : "");
    for (std::size_t j = 0; j < replace.size(); ++j)
      edit.replace += replace[j] + (j + 1 < replace.size() ? "\n" : "");
    parsed.edits.push_back(std::move(edit));
    i = r;
  }
  if (!parsed.edits.empty()) return parsed;
  // Fenced blocks: the one that defines the entry, else the largest.
  std::string best;
  bool best_defines = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (trim(lines[i]).rfind("```", 0) != 0) continue;
    std::string block;
    std::size_t k = i + 1;
    for (; k < lines.size() && trim(lines[k]).rfind("```", 0) != 0; ++k) block += lines[k] + "\n";
    const bool defines = find_definition(block, entry).has_value();
    if ((defines && !best_defines) || (defines == best_defines && block.size() > best.size())) {
      best = block;
      best_defines = defines;
    }
    i = k;
  }
  parsed.code = best;
  return parsed;
}

EditResult apply_edits(std::string_view source, const std::vector<Edit>& edits) {
  EditResult result;
  std::string text(source);
  for (std::size_t n = 0; n < edits.size(); ++n) {
    const Edit& edit = edits[n];
    if (edit.search.empty()) {
      result.reason = "edit " + std::to_string(n + 1) + " has an empty SEARCH part";
      return result;
    }
    if (std::size_t at = text.find(edit.search); at != std::string::npos) {
      text.replace(at, edit.search.size(), edit.replace);
      continue;
    }
    // Whitespace-tolerant: match the search text's non-space characters in order, any run of
    // whitespace in the search matching any (possibly empty between tokens) run in the text.
    const std::string wanted = collapse_whitespace(edit.search);
    std::optional<std::pair<std::size_t, std::size_t>> match;
    for (std::size_t start = 0; start < text.size() && !match; ++start) {
      if (std::isspace(static_cast<unsigned char>(text[start])) || text[start] != wanted[0])
        continue;
      std::size_t t = start, w = 0;
      while (t < text.size() && w < wanted.size()) {
        if (wanted[w] == ' ') {
          while (t < text.size() && std::isspace(static_cast<unsigned char>(text[t]))) ++t;
          ++w;
        } else if (std::isspace(static_cast<unsigned char>(text[t]))) {
          while (t < text.size() && std::isspace(static_cast<unsigned char>(text[t]))) ++t;
        } else if (text[t] == wanted[w]) {
          ++t;
          ++w;
        } else {
          break;
        }
      }
      if (w == wanted.size()) match = std::make_pair(start, t);
    }
    if (!match) {
      result.reason =
          "edit " + std::to_string(n + 1) + " does not apply: its SEARCH text is not in the source";
      return result;
    }
    text.replace(match->first, match->second - match->first, edit.replace);
  }
  result.ok = true;
  result.source = std::move(text);
  return result;
}

std::string entry_signature(std::string_view source, std::string_view entry) {
  auto where = find_definition(source, entry);
  if (!where) return "";
  return collapse_whitespace(source.substr(where->first, where->second - where->first));
}

namespace {

// The parameter list of a signature: its last parenthesised group (__launch_bounds__(...) comes
// first); nullopt when it has none.
std::optional<std::string_view> parameter_list(std::string_view signature) {
  const std::size_t close = signature.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::size_t open = close;
  for (int depth = 0; open-- > 0;) {
    if (signature[open] == ')') ++depth;
    if (signature[open] == '(' && depth-- == 0) break;
  }
  if (open == std::string_view::npos) return std::nullopt;
  return signature.substr(open + 1, close - open - 1);
}

}  // namespace

std::vector<std::string> parameter_names(std::string_view signature) {
  std::vector<std::string> out;
  const std::optional<std::string_view> found = parameter_list(signature);
  if (!found) return out;
  const std::string_view list = *found;
  auto name_of = [](std::string_view parameter) {
    // A default argument does not name it; the last identifier does, unless it is a type alone.
    parameter = parameter.substr(0, parameter.find('='));
    std::size_t end = parameter.find_last_not_of(" \t[]0123456789");
    if (end == std::string_view::npos) return std::string();
    std::size_t begin = end + 1;
    while (begin > 0 && (std::isalnum(static_cast<unsigned char>(parameter[begin - 1])) ||
                         parameter[begin - 1] == '_'))
      --begin;
    const std::string name(parameter.substr(begin, end + 1 - begin));
    const std::string_view before = parameter.substr(0, begin);
    // "float*" or "int" alone: the last word is a type, not a name.
    const bool typed = before.find_first_not_of(" \t") != std::string_view::npos;
    return typed && name != "const" && name != "__restrict__" ? name : std::string();
  };
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '<' || c == '(' || c == '[') ++depth;
    if (c == '>' || c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      std::string_view parameter = list.substr(start, i - start);
      const std::size_t first = parameter.find_first_not_of(" \t");
      const std::size_t last = parameter.find_last_not_of(" \t");
      parameter = first == std::string_view::npos ? "" : parameter.substr(first, last + 1 - first);
      if (!parameter.empty() && parameter != "void") out.push_back(name_of(parameter));
      start = i + 1;
    }
  }
  return out;
}

bool same_signature(std::string_view a, std::string_view b) {
  // The parameter types: split the list at top-level commas, drop qualifiers that do not change
  // the type a caller passes and the parameter name (the last identifier of a parameter).
  auto types = [](std::string_view signature) {
    std::vector<std::string> out;
    const std::optional<std::string_view> found = parameter_list(signature);
    if (!found) return out;
    std::string list(*found);
    for (const char* word : {"__restrict__", "__restrict", "restrict", "R3_RESTRICT"}) {
      for (std::size_t at; (at = list.find(word)) != std::string::npos;)
        list.erase(at, std::string_view(word).size());
    }
    int depth = 0;
    std::string current;
    auto push = [&] {
      std::string p = collapse_whitespace(current);
      std::size_t end = p.size();
      while (end > 0 && is_identifier_char(p[end - 1])) --end;
      std::string head = collapse_whitespace(p.substr(0, end));
      if (!head.empty()) p = head;  // "const float* x" -> "const float*"
      p.erase(std::remove(p.begin(), p.end(), ' '), p.end());
      if (!p.empty()) out.push_back(p);
      current.clear();
    };
    for (char c : list) {
      if (c == '<' || c == '(') ++depth;
      if (c == '>' || c == ')') --depth;
      if (c == ',' && depth == 0) {
        push();
      } else {
        current += c;
      }
    }
    push();
    return out;
  };
  return types(a) == types(b);
}

namespace {

// The blanks a directive may hold between its tokens, and a line splice between its backslash
// and newline (a newline ends a directive).
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// The text with what the preprocessor undoes before it looks for directives, where that could
// hide one from a reader of lines: the trigraphs ??= and ??/ as # and \ (C modes may read
// them), lines spliced where a backslash ends one (Clang and GCC allow blanks between), and the
// digraph %: as #. Nothing is taken out (comments and literals stay), so a scan of it for #
// sees every directive the compiler will, and perhaps more.
std::string directive_view(std::string_view source) {
  std::string text;
  text.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source.compare(i, 3, "?\?=") == 0 || source.compare(i, 3, "?\?/") == 0) {
      text += source[i + 2] == '=' ? '#' : '\\';
      i += 2;
    } else {
      text += source[i];
    }
  }
  std::string view;
  view.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\') {
      std::size_t j = i + 1;
      while (j < text.size() && is_blank(text[j])) ++j;
      if (j < text.size() && text[j] == '\n') {
        i = j;
        continue;
      }
    }
    view += text[i];
  }
  // Digraphs only once the lines are spliced: "%\" at a line's end and ":" on the next are one.
  for (std::size_t at = view.find("%:"); at != std::string::npos; at = view.find("%:", at + 1))
    view.replace(at, 2, "#");
  return view;
}

// Past the blanks and block comments from `at` (a comment is a blank to the preprocessor, even
// between a directive's # and its name, or its name and its file).
std::size_t skip_blanks(const std::string& view, std::size_t at) {
  while (at < view.size()) {
    if (is_blank(view[at])) {
      ++at;
    } else if (view.compare(at, 2, "/*") == 0) {
      const std::size_t end = view.find("*/", at + 2);
      at = end == std::string::npos ? view.size() : end + 2;
    } else {
      break;
    }
  }
  return at;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// "line", or the number of a GNU line marker ("# 33 \"app.cu\" 1"), which Clang and GCC read too.
bool names_a_line(const std::string& name) {
  return name == "line" || (!name.empty() && std::all_of(name.begin(), name.end(), is_digit));
}

// The file a #line directive or line marker names, from what follows its name: "" for none;
// nothing when #line is not followed by a number and a plain string literal (a macro, an
// escape: a reader cannot tell the file).
std::optional<std::string> line_file(const std::string& name, const std::string& rest) {
  std::size_t at = 0;
  if (name == "line") {
    while (at < rest.size() && is_digit(rest[at])) ++at;
    if (at == 0) return std::nullopt;
    while (at < rest.size() && rest[at] == ' ') ++at;
    if (at == rest.size()) return std::string();
    if (rest[at] != '"') return std::nullopt;
  } else if (rest.empty() || rest.front() != '"') {
    return std::string();  // "#1" in a comment, or a marker without a file
  }
  const std::size_t close = rest.find('"', at + 1);
  if (close == std::string::npos) return std::nullopt;
  std::string file = rest.substr(at + 1, close - at - 1);
  if (file.find('\\') != std::string::npos) return std::nullopt;
  return file;
}

}  // namespace

std::string include_problem(std::string_view parent, std::string_view candidate) {
  // Every # followed by the name of a directive that reads a file, wherever it stands in the
  // text (directive_view): one that begins a line is a directive, one elsewhere (in a comment, a
  // literal, after a comment at the start of a line) is counted too, which can only refuse more.
  auto directives = [](std::string_view source) {
    std::vector<std::pair<std::string, std::string>> found;  // (directive, what follows it)
    const std::string view = directive_view(source);
    for (std::size_t hash = view.find('#'); hash != std::string::npos;
         hash = view.find('#', hash + 1)) {
      const std::size_t at = skip_blanks(view, hash + 1);
      // A name may be written with universal character names (\u0075 for u): GCC reads
      // "#incl\u0075de" as #include. Such a name is kept as written, and refused below.
      std::size_t name_end = at;
      while (name_end < view.size()) {
        if (is_identifier_char(view[name_end])) {
          ++name_end;
        } else if (view[name_end] == '\\' && name_end + 1 < view.size() &&
                   (view[name_end + 1] == 'u' || view[name_end + 1] == 'U')) {
          name_end += 2;
        } else {
          break;
        }
      }
      std::string name = view.substr(at, name_end - at);
      if (name != "include" && name != "include_next" && name != "import" && name != "embed" &&
          !names_a_line(name) && name.find('\\') == std::string::npos)
        continue;
      const std::size_t target = skip_blanks(view, name_end);
      const std::size_t line_end = std::min(view.find('\n', target), view.size());
      std::string rest =
          collapse_whitespace(std::string_view(view).substr(target, line_end - target));
      // "name" or <name>, without what follows it (a comment)
      if (!rest.empty() && (rest.front() == '"' || rest.front() == '<')) {
        std::size_t close = rest.find(rest.front() == '"' ? '"' : '>', 1);
        if (close != std::string::npos) rest.resize(close + 1);
      }
      found.emplace_back(name, rest);
    }
    return found;
  };
  // Clang and GCC end a line at a lone carriage return (a backslash before one splices lines)
  // and Clang takes "\n\r" for one line end; both read a NUL as a blank. A reader of the text
  // would have to copy each of these rules exactly; a kernel's source needs none of them.
  for (std::size_t at = 0; at < candidate.size(); ++at) {
    if (candidate[at] == '\0')
      return "a NUL byte at offset " + std::to_string(at) + ": a candidate may not hold one";
    if (candidate[at] == '\r' && (at + 1 >= candidate.size() || candidate[at + 1] != '\n'))
      return "a carriage return not followed by a newline at offset " + std::to_string(at) +
             ": a candidate may end its lines with \\n or \\r\\n only";
  }
  const auto known = directives(parent);
  std::set<std::string> known_line_files;  // the files the parent's #line directives name
  for (const auto& [name, target] : known)
    if (names_a_line(name)) known_line_files.insert(line_file(name, target).value_or(""));
  for (const auto& [name, target] : directives(candidate)) {
    if (std::find(known.begin(), known.end(), std::pair{name, target}) != known.end()) continue;
    const std::string shown = "#" + name + " " + target;
    if (names_a_line(name)) {
      // The sandbox quotes the diagnostics of the files a #line names as the candidate's own
      // (an application unit's pieces): "#line 1 \"key.txt\"" before #include "key.txt" would
      // have a file beside the source quoted back, line by line, into the next prompt. A
      // candidate may renumber its lines, and name only the files its parent names.
      const std::optional<std::string> file = line_file(name, target);
      if (!file) return "'" + shown + "': a #line directive must be a number and a plain \"file\"";
      if (!file->empty() && !known_line_files.contains(*file))
        return "'" + shown + "': a candidate may name in a #line directive only the files its " +
               "parent names there";
      continue;
    }
    if (name.find('\\') != std::string::npos)
      return "'" + shown + "': a directive's name written with universal character names";
    const bool quoted = target.size() >= 2 && ((target.front() == '"' && target.back() == '"') ||
                                               (target.front() == '<' && target.back() == '>'));
    if (!quoted || name == "embed")
      return "'" + shown + "': a candidate may add only plain #include lines";
    const std::string path = target.substr(1, target.size() - 2);
    if (path.empty() || path.front() == '/' || path.find('\\') != std::string::npos ||
        path == ".." || path.rfind("../", 0) == 0 || path.find("/../") != std::string::npos ||
        (path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0))
      return "'" + shown +
             "': a candidate may include files from the kernel's include path only "
             "(no absolute paths, no '..')";
  }
  return "";
}

Candidate candidate_from_response(std::string_view parent, std::string_view response,
                                  std::string_view entry) {
  Candidate candidate;
  ParsedResponse parsed = parse_response(response, entry);
  if (!parsed.edits.empty()) {
    EditResult edited = apply_edits(parent, parsed.edits);
    if (!edited.ok) {
      candidate.reason = edited.reason;
      return candidate;
    }
    candidate.source = std::move(edited.source);
  } else if (!parsed.code.empty()) {
    candidate.source = std::move(parsed.code);
  } else {
    candidate.reason = "the answer holds no code (no fenced block, no SEARCH/REPLACE edit)";
    return candidate;
  }
  const std::string before = entry_signature(parent, entry);
  const std::string after = entry_signature(candidate.source, entry);
  if (after.empty()) {
    candidate.reason = "the answer does not define the kernel '" + std::string(entry) + "'";
  } else if (!before.empty() && !same_signature(before, after)) {
    candidate.reason = "the signature of '" + std::string(entry) + "' changed from '" + before +
                       "' to '" + after + "'";
  } else if (collapse_whitespace(candidate.source) == collapse_whitespace(parent)) {
    candidate.reason = "nothing changed";
  } else if (std::string why = include_problem(parent, candidate.source); !why.empty()) {
    candidate.reason = why;
  } else {
    candidate.ok = true;
  }
  return candidate;
}

std::vector<Tunable> parse_tunables(std::string_view source) {
  std::vector<Tunable> tunables;
  constexpr std::string_view kMacro = "R3_TUNABLE(";
  for (std::size_t at = 0; (at = source.find(kMacro, at)) != std::string_view::npos;) {
    if (at > 0 && is_identifier_char(source[at - 1])) {  // part of a longer name
      at += kMacro.size();
      continue;
    }
    const std::size_t close = source.find(')', at);
    if (close == std::string_view::npos) break;
    std::string arguments(source.substr(at + kMacro.size(), close - at - kMacro.size()));
    at = close;
    // Arguments are separated by commas; the values may also be separated by spaces.
    std::vector<std::string> items;
    std::string current;
    for (char c : arguments + ",") {
      if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
        if (!current.empty()) items.push_back(current);
        current.clear();
      } else {
        current += c;
      }
    }
    if (items.size() < 3 || !std::all_of(items[0].begin(), items[0].end(), is_identifier_char))
      continue;
    Tunable t{items[0], items[1], std::vector<std::string>(items.begin() + 2, items.end())};
    if (std::find(t.values.begin(), t.values.end(), t.default_value) == t.values.end()) {
      t.values.insert(t.values.begin(), t.default_value);
    }
    if (std::none_of(tunables.begin(), tunables.end(),
                     [&](const Tunable& o) { return o.name == t.name; })) {
      tunables.push_back(std::move(t));
    }
  }
  return tunables;
}

}  // namespace r3::evolve
