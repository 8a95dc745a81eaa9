#include "r3/report/unit_patch.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "r3/report/diff.hpp"

namespace r3::report {
namespace {

struct UnitPiece {
  unsigned line = 0;
  std::string file;
  std::string text;
};

// The pieces after each '#line N "FILE"' marker, up to the next marker or the end; nullopt-like
// empty result when there is none.
std::vector<UnitPiece> pieces_of(const std::string& unit) {
  std::vector<UnitPiece> out;
  std::size_t at = 0;
  while (at < unit.size()) {
    std::size_t end = unit.find('\n', at);
    if (end == std::string::npos) end = unit.size();
    const std::string line = unit.substr(at, end - at);
    const std::size_t next = end < unit.size() ? end + 1 : end;
    if (line.rfind("#line ", 0) == 0) {
      UnitPiece p;
      std::istringstream in(line.substr(6));
      in >> p.line;
      const std::size_t open = line.find('"'), close = line.rfind('"');
      if (!in || open == std::string::npos || close <= open) return {};
      p.file = line.substr(open + 1, close - open - 1);
      out.push_back(p);
    } else if (!out.empty() && !line.ends_with("(r3 extract)")) {
      // (Lines the extraction added around pieces, such as namespaces, belong to no piece.)
      out.back().text += unit.substr(at, next - at);
    }
    at = next;
  }
  return out;
}

// The text before the first '#line' marker ("" when there is none).
std::string prelude_of(const std::string& unit) {
  if (unit.rfind("#line ", 0) == 0) return "";
  const std::size_t first = unit.find("\n#line ");
  return first == std::string::npos ? "" : unit.substr(0, first + 1);
}

bool starts_with_word(const std::string& line, const std::string& word) {
  const std::size_t at = line.find_first_not_of(" \t");
  return at != std::string::npos && line.compare(at, word.size(), word) == 0;
}

// What a candidate put before the unit's pieces that the application needs: neither what the
// unit had there already nor r3's declarations and the guards that define them away.
std::string added_prelude(const std::string& original_unit, const std::string& best_unit) {
  const std::string before = prelude_of(original_unit), after = prelude_of(best_unit);
  const bool prepended = after.ends_with(before);
  std::vector<std::string> lines;
  std::istringstream in(prepended ? after.substr(0, after.size() - before.size()) : after);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    bool own = false;
    for (const std::string name : {"R3_TUNABLE", "R3_LAUNCH_BLOCK", "R3_LAUNCH_GRID"}) {
      if (starts_with_word(lines[i], name + "(")) own = true;
      if (i + 2 < lines.size() && lines[i] == "#ifndef " + name &&
          starts_with_word(lines[i + 1], "#define " + name + "(") && lines[i + 2] == "#endif") {
        i += 2;
        own = true;
      }
    }
    if (own || (!prepended && before.find(lines[i] + "\n") != std::string::npos)) continue;
    out += lines[i] + "\n";
  }
  return out;
}

std::size_t offset_of_line(const std::string& text, unsigned line) {
  std::size_t at = 0;
  for (unsigned l = 1; l < line; ++l) {
    at = text.find('\n', at);
    if (at == std::string::npos) return std::string::npos;
    ++at;
  }
  return at;
}

namespace fs = std::filesystem;

// `directory` as an absolute path without "." or "..".
fs::path absolute_directory(const fs::path& directory) {
  return fs::absolute(directory.empty() ? fs::path(".") : directory).lexically_normal();
}

// The deepest directory that holds both (absolute, normal) directories.
fs::path common_directory(const fs::path& a, const fs::path& b) {
  fs::path common;
  for (auto x = a.begin(), y = b.begin(); x != a.end() && y != b.end() && *x == *y; ++x, ++y)
    common /= *x;
  return common;
}

}  // namespace

std::vector<FilePatch> patch_files_from_unit(const std::string& original_unit,
                                             const std::string& best_unit) {
  std::vector<UnitPiece> before = pieces_of(original_unit), after = pieces_of(best_unit);
  if (before.empty() || before.size() != after.size()) return {};
  // Edits per file, as (offset, length, replacement), applied from the end.
  std::map<std::string, std::vector<std::tuple<std::size_t, std::size_t, std::string>>> edits;
  std::map<std::string, std::string> files;
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (before[i].line != after[i].line || before[i].file != after[i].file) return {};
    const std::string& old_text = before[i].text;
    const std::string& new_text = after[i].text;
    if (old_text == new_text) continue;
    if (!files.contains(before[i].file)) {
      std::ifstream in(before[i].file, std::ios::binary);
      if (!in) return {};
      std::ostringstream text;
      text << in.rdbuf();
      files[before[i].file] = text.str();
    }
    const std::string& file = files[before[i].file];
    const std::size_t at = offset_of_line(file, before[i].line);
    if (at == std::string::npos) return {};
    // The piece starts at that line, or within it (a declaration after other text).
    std::size_t found = file.find(old_text, at);
    std::string old_piece = old_text, new_piece = new_text;
    if (found == std::string::npos && !old_text.empty() && old_text.back() == '\n') {
      // The unit added the newline a piece that ends mid-line lacks.
      old_piece.pop_back();
      if (!new_piece.empty() && new_piece.back() == '\n') new_piece.pop_back();
      found = file.find(old_piece, at);
    }
    if (found == std::string::npos || file.find('\n', at) < found) return {};
    edits[before[i].file].emplace_back(found, old_piece.size(), new_piece);
  }
  // The candidate's own macros go into the kernel's file (the last piece's) before the first
  // piece changed there, or else before the kernel.
  if (const std::string prelude = added_prelude(original_unit, best_unit); !prelude.empty()) {
    const std::string& kernel_file = before.back().file;
    std::size_t piece = before.size() - 1;
    for (std::size_t i = 0; i < before.size(); ++i) {
      if (before[i].file == kernel_file && before[i].text != after[i].text) {
        piece = i;
        break;
      }
    }
    if (!files.contains(kernel_file)) {
      std::ifstream in(kernel_file, std::ios::binary);
      if (!in) return {};
      std::ostringstream text;
      text << in.rdbuf();
      files[kernel_file] = text.str();
    }
    const std::size_t at = offset_of_line(files[kernel_file], before[piece].line);
    if (at == std::string::npos) return {};
    edits[kernel_file].emplace_back(at, 0, prelude);
  }
  std::vector<FilePatch> out;
  for (auto& [path, list] : edits) {
    FilePatch patch{path, files[path], files[path]};
    std::sort(list.begin(), list.end(),
              [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
    for (const auto& [offset, length, text] : list) patch.after.replace(offset, length, text);
    out.push_back(std::move(patch));
  }
  return out;
}

std::string with_tunable_values(const std::string& source,
                                const std::map<std::string, std::string>& values) {
  std::istringstream in(source);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    for (const auto& [name, value] : values) {
      // "#define NAME old" (any indentation, spaces after '#'), and "R3_TUNABLE(NAME, old, ...".
      const std::size_t hash = line.find_first_not_of(" \t");
      if (hash != std::string::npos && line[hash] == '#') {
        std::istringstream words(line.substr(hash + 1));
        std::string directive, defined, old;
        words >> directive >> defined >> old;
        std::string rest;
        std::getline(words, rest);
        if (directive == "define" && defined == name && !old.empty() &&
            rest.find_first_not_of(" \t\r") == std::string::npos)
          line = line.substr(0, hash) + "#define " + name + " " + value;
      }
      // "#pragma unroll NAME": nvcc does not expand macros there (NVRTC does).
      if (hash != std::string::npos && line[hash] == '#') {
        std::istringstream words(line.substr(hash + 1));
        std::string directive, what, argument, rest;
        words >> directive >> what >> argument;
        std::getline(words, rest);
        if (directive == "pragma" && what == "unroll" && argument == name &&
            rest.find_first_not_of(" \t\r") == std::string::npos)
          line = line.substr(0, hash) + "#pragma unroll " + value;
      }
      const std::string tunable = "R3_TUNABLE(" + name + ",";
      if (starts_with_word(line, tunable)) {
        const std::size_t open = line.find(tunable) + tunable.size();
        const std::size_t comma = line.find(',', open);
        if (comma != std::string::npos) line = line.substr(0, open) + " " + value + line.substr(comma);
      }
    }
    out += line + "\n";
  }
  if (!source.empty() && source.back() != '\n') out.pop_back();
  return out;
}

std::string application_patch(const std::vector<FilePatch>& files,
                              const fs::path& source_directory) {
  if (files.empty()) return "";
  fs::path base = absolute_directory(source_directory);
  for (const FilePatch& f : files) base = common_directory(base, absolute_directory(f.file.parent_path()));
  std::string patch = "# r3: apply in " + base.string() + " with: patch -p1 < best.diff\n";
  for (const FilePatch& f : files) {
    fs::path name = fs::absolute(f.file).lexically_normal().lexically_relative(base);
    if (name.empty()) name = f.file.filename();
    patch += unified_diff(f.before, f.after, name.generic_string());
  }
  return patch;
}

}  // namespace r3::report
