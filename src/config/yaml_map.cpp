#include "yaml_map.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "r3/duration.hpp"
#include "r3/error.hpp"

namespace r3::config::yaml {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

const std::string& scalar(const Document& doc, const YAML::Node& node, const std::string& key,
                          const std::string& expected) {
  if (!node.IsScalar()) {
    doc.fail(node, key, "expected " + expected + ", got " + describe(node));
  }
  return node.Scalar();
}

}  // namespace

void Document::fail(const YAML::Mark& mark, const std::string& key,
                    const std::string& message) const {
  ErrorContext context;
  context.file = file_;
  if (!mark.is_null()) {
    context.line = mark.line + 1;
    context.column = mark.column + 1;
  }
  context.key = key;
  throw ConfigError(message, context);
}

void Document::remember(const std::string& key, const YAML::Mark& mark) const {
  if (locations_ != nullptr && !mark.is_null()) {
    (*locations_)[key] = Location{mark.line + 1, mark.column + 1};
  }
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "nothing (null)";
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Undefined:
      return "nothing";
  }
  return "something else";
}

std::string closest(std::string_view text, const std::vector<std::string>& known) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, text.size() / 3) + 1;
  for (const std::string& candidate : known) {
    std::size_t distance = edit_distance(lower(text), lower(candidate));
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

bool decode_bool(const Document& doc, const YAML::Node& node, const std::string& key) {
  std::string text = lower(scalar(doc, node, key, "true or false"));
  if (text == "true" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "no" || text == "off") return false;
  doc.fail(node, key, "expected true or false, got '" + node.Scalar() + "'");
}

std::string decode_string(const Document& doc, const YAML::Node& node, const std::string& key) {
  if (node.IsNull()) return "";
  return scalar(doc, node, key, "a string");
}

std::int64_t decode_int(const Document& doc, const YAML::Node& node, const std::string& key,
                        std::int64_t min, std::int64_t max) {
  const std::string& text = scalar(doc, node, key, "an integer");
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    doc.fail(node, key, "expected an integer, got '" + text + "'");
  }
  if (value < min || value > max) {
    doc.fail(node, key,
             "must lie in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + text);
  }
  return value;
}

double decode_double(const Document& doc, const YAML::Node& node, const std::string& key) {
  const std::string& text = scalar(doc, node, key, "a number");
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    doc.fail(node, key, "expected a number, got '" + text + "'");
  }
  return value;
}

double decode_duration(const Document& doc, const YAML::Node& node, const std::string& key) {
  const std::string& text = scalar(doc, node, key, "a duration");
  auto seconds = parse_duration(text);
  if (!seconds) {
    doc.fail(node, key, "expected a duration such as 90, 90s, 5m, 2h or 1h30m, got '" + text + "'");
  }
  return *seconds;
}

std::string decode_choice(const Document& doc, const YAML::Node& node, const std::string& key,
                          const std::vector<std::string>& names) {
  const std::string& text = scalar(doc, node, key, "one of: " + join(names));
  if (std::find(names.begin(), names.end(), text) != names.end()) return text;
  std::string message = "'" + text + "' is not one of: " + join(names);
  if (std::string guess = closest(text, names); !guess.empty()) {
    message += " (did you mean '" + guess + "'?)";
  }
  doc.fail(node, key, message);
}

Map::Map(const Document& doc, const YAML::Node& node, std::string key)
    : doc_(doc), node_(node), key_(std::move(key)) {
  if (!node.IsMap()) {
    doc.fail(node, key_, "expected a mapping of keys to values, got " + describe(node));
  }
  for (const auto& entry : node) {
    const YAML::Node& name = entry.first;
    if (!name.IsScalar()) doc.fail(name, key_, "keys must be plain names");
    for (const auto& [seen, mark] : entries_) {
      if (seen == name.Scalar()) {
        doc.fail(name, this->key(seen),
                 "duplicate key (first written on line " + std::to_string(mark.line + 1) + ")");
      }
    }
    entries_.emplace_back(name.Scalar(), name.Mark());
    doc.remember(this->key(name.Scalar()),
                 entry.second.IsNull() ? name.Mark() : entry.second.Mark());
  }
}

std::string Map::key(std::string_view name) const {
  return key_.empty() ? std::string(name) : key_ + "." + std::string(name);
}

bool Map::has(std::string_view name) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const auto& entry) { return entry.first == name; });
}

YAML::Node Map::get(std::string_view name) {
  known_.emplace_back(name);
  if (!has(name)) return YAML::Node(YAML::NodeType::Undefined);
  return node_[std::string(name)];
}

void Map::fail(std::string_view name, const std::string& message) const {
  for (const auto& [entry, mark] : entries_) {
    if (entry == name) doc_.fail(mark, key(name), message);
  }
  doc_.fail(node_.Mark(), key(name), message);
}

void Map::read(std::string_view name, bool& out) {
  if (YAML::Node node = get(name); node.IsDefined()) out = decode_bool(doc_, node, key(name));
}

void Map::read(std::string_view name, std::string& out) {
  if (YAML::Node node = get(name); node.IsDefined()) out = decode_string(doc_, node, key(name));
}

void Map::read(std::string_view name, double& out) {
  if (YAML::Node node = get(name); node.IsDefined()) out = decode_double(doc_, node, key(name));
}

void Map::read(std::string_view name, std::uint32_t& out, std::uint32_t min, std::uint32_t max) {
  if (YAML::Node node = get(name); node.IsDefined()) {
    out = static_cast<std::uint32_t>(decode_int(doc_, node, key(name), min, max));
  }
}

void Map::read(std::string_view name, std::uint64_t& out) {
  if (YAML::Node node = get(name); node.IsDefined()) {
    out = static_cast<std::uint64_t>(decode_int(doc_, node, key(name), 0, INT64_MAX));
  }
}

void Map::read_duration(std::string_view name, double& out) {
  if (YAML::Node node = get(name); node.IsDefined()) out = decode_duration(doc_, node, key(name));
}

void Map::read(std::string_view name, std::vector<std::string>& out) {
  YAML::Node node = get(name);
  if (!node.IsDefined()) return;
  out.clear();
  for_each_item(doc_, node, key(name), [&](const YAML::Node& item, const std::string& item_key) {
    out.push_back(scalar(doc_, item, item_key, "a string"));
  });
}

void Map::read(std::string_view name, std::vector<std::uint32_t>& out, std::uint32_t min,
               std::uint32_t max) {
  YAML::Node node = get(name);
  if (!node.IsDefined()) return;
  out.clear();
  for_each_item(doc_, node, key(name), [&](const YAML::Node& item, const std::string& item_key) {
    out.push_back(static_cast<std::uint32_t>(decode_int(doc_, item, item_key, min, max)));
  });
  if (out.empty()) fail(name, "must list at least one value");
}

void Map::read(std::string_view name, std::vector<int>& out, int min, int max) {
  YAML::Node node = get(name);
  if (!node.IsDefined()) return;
  out.clear();
  for_each_item(doc_, node, key(name), [&](const YAML::Node& item, const std::string& item_key) {
    out.push_back(static_cast<int>(decode_int(doc_, item, item_key, min, max)));
  });
  if (out.empty()) fail(name, "must list at least one value");
}

void Map::read_choices(std::string_view name, std::vector<std::string>& out,
                       const std::vector<std::string>& allowed) {
  YAML::Node node = get(name);
  if (!node.IsDefined()) return;
  out.clear();
  for_each_item(doc_, node, key(name), [&](const YAML::Node& item, const std::string& item_key) {
    std::string choice = decode_choice(doc_, item, item_key, allowed);
    if (std::find(out.begin(), out.end(), choice) != out.end()) {
      doc_.fail(item, item_key, "'" + choice + "' is listed twice");
    }
    out.push_back(choice);
  });
}

void Map::finish() const {
  for (const auto& [name, mark] : entries_) {
    if (std::find(known_.begin(), known_.end(), name) != known_.end()) continue;
    std::string message = "unknown key '" + name + "'";
    if (std::string guess = closest(name, known_); !guess.empty()) {
      message += " (did you mean '" + guess + "'?)";
    } else {
      message += "; known keys here: " + join(known_);
    }
    doc_.fail(mark, key(name), message);
  }
}

}  // namespace r3::config::yaml
