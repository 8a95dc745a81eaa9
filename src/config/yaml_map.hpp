// Strict reading of YAML mappings into typed values, private to libr3core. Every read records
// where the key was written; every failure is a ConfigError with file, line, column and the
// dotted key; a mapping that holds a key nobody asked for is an error (with a suggestion).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "r3/config/tune_config.hpp"

namespace r3::config::yaml {

class Document {
 public:
  Document(std::string file, std::map<std::string, Location>* locations)
      : file_(std::move(file)), locations_(locations) {}

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& key,
                         const std::string& message) const;
  [[noreturn]] void fail(const YAML::Node& node, const std::string& key,
                         const std::string& message) const {
    fail(node.Mark(), key, message);
  }
  void remember(const std::string& key, const YAML::Mark& mark) const;
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::map<std::string, Location>* locations_;
};

// A short name of what a node is, for "expected X, got Y".
std::string describe(const YAML::Node& node);
// The known name closest to `text`, or "" when none is close.
std::string closest(std::string_view text, const std::vector<std::string>& known);

// Scalar decoders; `key` is the dotted path used in messages.
bool decode_bool(const Document& doc, const YAML::Node& node, const std::string& key);
std::string decode_string(const Document& doc, const YAML::Node& node, const std::string& key);
std::int64_t decode_int(const Document& doc, const YAML::Node& node, const std::string& key,
                        std::int64_t min, std::int64_t max);
double decode_double(const Document& doc, const YAML::Node& node, const std::string& key);
double decode_duration(const Document& doc, const YAML::Node& node, const std::string& key);
// One of `names` (the message lists them all when it is not).
std::string decode_choice(const Document& doc, const YAML::Node& node, const std::string& key,
                          const std::vector<std::string>& names);
// A sequence; calls item(node, "key[i]") for each element.
template <class Item>
void for_each_item(const Document& doc, const YAML::Node& node, const std::string& key,
                   Item&& item) {
  if (!node.IsSequence()) doc.fail(node, key, "expected a list, got " + describe(node));
  for (std::size_t i = 0; i < node.size(); ++i) {
    std::string item_key = key + "[" + std::to_string(i) + "]";
    doc.remember(item_key, node[i].Mark());
    item(node[i], item_key);
  }
}

class Map {
 public:
  // Fails unless `node` is a mapping with scalar, unique keys.
  Map(const Document& doc, const YAML::Node& node, std::string key);

  // The value of `name` (undefined node if absent); marks the name as known.
  YAML::Node get(std::string_view name);
  bool has(std::string_view name) const;
  std::string key(std::string_view name) const;  // dotted path of a child
  const Document& doc() const { return doc_; }
  const YAML::Node& node() const { return node_; }

  // Typed readers: leave `out` untouched when the key is absent.
  void read(std::string_view name, bool& out);
  void read(std::string_view name, std::string& out);
  void read(std::string_view name, double& out);
  void read(std::string_view name, std::uint32_t& out, std::uint32_t min = 0,
            std::uint32_t max = UINT32_MAX);
  void read(std::string_view name, std::uint64_t& out);
  void read_duration(std::string_view name, double& out);
  void read(std::string_view name, std::vector<std::string>& out);
  void read(std::string_view name, std::vector<std::uint32_t>& out, std::uint32_t min,
            std::uint32_t max);
  void read(std::string_view name, std::vector<int>& out, int min, int max);
  void read_choices(std::string_view name, std::vector<std::string>& out,
                    const std::vector<std::string>& allowed);

  // Fails at the first key that was never asked for.
  void finish() const;

  // Fails at the line of key `name`, or at this mapping when `name` was not written.
  [[noreturn]] void fail(std::string_view name, const std::string& message) const;

 private:
  const Document& doc_;
  YAML::Node node_;
  std::string key_;
  std::vector<std::pair<std::string, YAML::Mark>> entries_;  // in file order
  std::vector<std::string> known_;
};

}  // namespace r3::config::yaml
