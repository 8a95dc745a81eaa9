// How tune.yaml's keys are declared, private to libr3config: each key once, as a Key of the
// struct it fills (its name, the member, the range, a one-line doc; its default is the member's
// initializer). Reading a section, writing the resolved configuration back (`to_yaml`) and
// describing the keys (`describe_keys`: r3-mpi --keys and the check of docs/tune-yaml.md) all
// walk the same declarations, so they cannot disagree.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "r3/config/tune_config.hpp"
#include "r3/duration.hpp"
#include "r3/enum_names.hpp"
#include "yaml_map.hpp"

namespace r3::config::schema {

// What reading a key needs besides its mapping: the directory relative paths start from.
struct Context {
  std::filesystem::path base;
};

// An enum's names in tune.yaml, in the order the docs list them.
template <class Enum>
struct Names {
  std::vector<std::pair<std::string, Enum>> table;

  // The spelling a library already has (r3/enum_names.hpp), in its order.
  template <std::size_t N>
  static Names of(const EnumNames<Enum, N>& names) {
    Names out;
    for (const auto& [value, text] : names) out.table.emplace_back(std::string(text), value);
    return out;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, value] : table) out.push_back(name);
    return out;
  }
  const std::string& name(Enum value) const {
    for (const auto& [name, v] : table) {
      if (v == value) return name;
    }
    return table.front().first;
  }
  // `chosen` is one of names().
  Enum value(const std::string& chosen) const {
    for (const auto& [name, value] : table) {
      if (name == chosen) return value;
    }
    return table.front().second;
  }
};

// A closed or open interval of a number key, with the words messages and docs use for it.
struct Range {
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  bool low_open = false;

  static Range any() { return {}; }
  static Range positive() { return {0, std::numeric_limits<double>::infinity(), true}; }
  static Range non_negative() { return {0, std::numeric_limits<double>::infinity(), false}; }
  static Range closed(double low, double high) { return {low, high, false}; }
  static Range left_open(double low, double high) { return {low, high, true}; }

  bool contains(double value) const {
    return (low_open ? value > low : value >= low) && value <= high;
  }
  std::string requirement() const;                // "must lie in [0, 1]", "must be positive", ...
  std::string type(std::string_view noun) const;  // "number in [0, 1]", "positive number", ...
};

// One row of the keys' description: what docs/tune-yaml.md's tables show.
using KeyDescription = config::KeyDescription;

template <class S>
struct Section;

template <class S>
struct Key {
  using Read = std::function<void(yaml::Map&, S&, const Context&)>;
  using Write = std::function<void(YAML::Emitter&, const S&)>;
  // Constructors rather than aggregates (Key, Section): the members after these are set
  // afterwards or not at all, and GCC 12 warns (-Wmissing-field-initializers) about every
  // aggregate initialisation that leaves them out.
  Key(std::string name, std::string type, std::string doc, Read read, Write write)
      : name(std::move(name)),
        type(std::move(type)),
        doc(std::move(doc)),
        read(std::move(read)),
        write(std::move(write)) {}
  std::string name;
  std::string type;  // as the docs' "type" column writes it
  std::string doc;   // one line
  Read read;
  Write write;  // the value, after the key
  // The default as the docs write it; empty: the value of a default-made S, as written.
  std::string default_text;
  std::function<bool(const S&)> written;  // unset: always written
  // A section's keys, for descriptions (set for nested sections only).
  std::function<void(const std::string& prefix, std::vector<KeyDescription>&)> describe_children;

  Key&& defaults_to(std::string text) && {
    default_text = std::move(text);
    return std::move(*this);
  }
};

// The keys of one mapping, in the order they are written back, and what ties them together.
template <class S>
struct Section {
  using Check = std::function<void(yaml::Map&, S&, const Context&)>;
  Section(std::vector<Key<S>> keys, Check check = {})
      : keys(std::move(keys)), check(std::move(check)) {}
  std::vector<Key<S>> keys;
  // After every key was read: the checks that involve more than one key.
  Check check;
};

// Reads every declared key of `map` into `value`, runs the section's check, and refuses keys
// nobody declared.
template <class S>
void read(const Section<S>& section, yaml::Map& map, S& value, const Context& context) {
  for (const Key<S>& key : section.keys) key.read(map, value, context);
  if (section.check) section.check(map, value, context);
  map.finish();
}

template <class S>
void write(const Section<S>& section, YAML::Emitter& out, const S& value) {
  out << YAML::BeginMap;
  for (const Key<S>& key : section.keys) {
    if (key.written && !key.written(value)) continue;
    out << YAML::Key << key.name << YAML::Value;
    key.write(out, value);
  }
  out << YAML::EndMap;
}

// A value as it would be written (a default, for the docs).
template <class S>
std::string written_text(const Key<S>& key, const S& value) {
  YAML::Emitter out;
  out.SetDoublePrecision(15);
  out << YAML::Flow;
  key.write(out, value);
  return out.c_str();
}

template <class S>
void describe(const Section<S>& section, const std::string& prefix,
              std::vector<KeyDescription>& out) {
  const S defaults{};
  for (const Key<S>& key : section.keys) {
    // A nested mapping is only its keys; a list of mappings (kernels) is a row of its own too.
    const bool mapping = key.describe_children && key.type == "mapping";
    if (!mapping)
      out.push_back(
          {prefix + key.name, key.type,
           key.default_text.empty() ? "`" + written_text(key, defaults) + "`" : key.default_text,
           key.doc});
    if (key.describe_children)
      key.describe_children(prefix + key.name + (mapping ? "." : "[]."), out);
  }
}

// Reads a path key relative to `base` ("~/" is the home directory).
void read_path(yaml::Map& map, const std::string& name, std::filesystem::path& out,
               const std::filesystem::path& base);
std::filesystem::path resolve(const std::filesystem::path& base, const std::string& text);

// --- Keys of the common kinds, bound to a member of S -------------------------------------

template <class S>
Key<S> flag(std::string name, bool S::*member, std::string doc) {
  const std::string key = name;
  return {std::move(name), "bool", std::move(doc),
          [=](yaml::Map& map, S& s, const Context&) { map.read(key, s.*member); },
          [=](YAML::Emitter& out, const S& s) { out << (s.*member); }};
}

template <class S>
Key<S> text(std::string name, std::string S::*member, std::string type, std::string doc) {
  const std::string key = name;
  return {std::move(name), std::move(type), std::move(doc),
          [=](yaml::Map& map, S& s, const Context&) { map.read(key, s.*member); },
          [=](YAML::Emitter& out, const S& s) { out << (s.*member); }};
}

std::string integer_type(std::int64_t low, std::int64_t high, std::int64_t type_high);

// An integer member of any width, within [low, high].
template <class S, class T>
Key<S> integer(std::string name, T S::*member, std::int64_t low, std::int64_t high,
               std::string doc) {
  const std::string key = name;
  const std::int64_t type_high =
      static_cast<std::int64_t>(std::min<std::uint64_t>(std::numeric_limits<T>::max(), INT64_MAX));
  return {std::move(name), integer_type(low, high, type_high), std::move(doc),
          [=](yaml::Map& map, S& s, const Context&) {
            if (YAML::Node node = map.get(key); node.IsDefined())
              s.*member = static_cast<T>(
                  yaml::decode_int(map.doc(), node, map.key(key), low, std::min(high, type_high)));
          },
          [=](YAML::Emitter& out, const S& s) { out << (s.*member); }};
}

// A number key within `range`: a plain number, or a duration ("90s", "2h") written back as one.
template <class S>
Key<S> ranged(std::string name, double S::*member, Range range, bool is_duration, std::string doc) {
  const std::string key = name;
  return {std::move(name), range.type(is_duration ? "duration" : "number"), std::move(doc),
          [=](yaml::Map& map, S& s, const Context&) {
            if (is_duration)
              map.read_duration(key, s.*member);
            else
              map.read(key, s.*member);
            if (map.has(key) && !range.contains(s.*member)) map.fail(key, range.requirement());
          },
          [=](YAML::Emitter& out, const S& s) {
            if (is_duration)
              out << format_duration(s.*member);
            else
              out << (s.*member);
          }};
}

template <class S>
Key<S> number(std::string name, double S::*member, Range range, std::string doc) {
  return ranged(std::move(name), member, range, false, std::move(doc));
}

template <class S>
Key<S> duration(std::string name, double S::*member, Range range, std::string doc) {
  return ranged(std::move(name), member, range, true, std::move(doc));
}

std::string choice_type(const std::vector<std::string>& names);

template <class S, class Enum>
Key<S> choice(std::string name, Enum S::*member, const Names<Enum>& names, std::string doc) {
  const std::string key = name;
  return {std::move(name), choice_type(names.names()), std::move(doc),
          [=](yaml::Map& map, S& s, const Context&) {
            if (YAML::Node node = map.get(key); node.IsDefined())
              s.*member =
                  names.value(yaml::decode_choice(map.doc(), node, map.key(key), names.names()));
          },
          [=](YAML::Emitter& out, const S& s) { out << names.name(s.*member); }};
}

template <class T>
void write_list(YAML::Emitter& out, const std::vector<T>& values) {
  out << YAML::Flow << YAML::BeginSeq;
  for (const T& value : values) out << value;
  out << YAML::EndSeq;
}

template <class S>
Key<S> texts(std::string name, std::vector<std::string> S::*member, std::string type,
             std::string doc) {
  const std::string key = name;
  return {std::move(name), std::move(type), std::move(doc),
          [=](yaml::Map& map, S& s, const Context&) { map.read(key, s.*member); },
          [=](YAML::Emitter& out, const S& s) { write_list(out, s.*member); }};
}

// A list of distinct names out of `allowed`.
template <class S>
Key<S> subset(std::string name, std::vector<std::string> S::*member,
              const std::vector<std::string>& allowed, std::string doc) {
  const std::string key = name;
  return {std::move(name), "list of " + choice_type(allowed), std::move(doc),
          [=](yaml::Map& map, S& s, const Context&) { map.read_choices(key, s.*member, allowed); },
          [=](YAML::Emitter& out, const S& s) { write_list(out, s.*member); }};
}

// A non-empty list of integers within [low, high].
template <class S, class T>
Key<S> integers(std::string name, std::vector<T> S::*member, T low, T high, std::string doc) {
  const std::string key = name;
  return {std::move(name), "list of " + integer_type(low, high, std::numeric_limits<T>::max()),
          std::move(doc),
          [=](yaml::Map& map, S& s, const Context&) { map.read(key, s.*member, low, high); },
          [=](YAML::Emitter& out, const S& s) { write_list(out, s.*member); }};
}

// A path, relative to tune.yaml's directory; empty stays empty.
template <class S>
Key<S> path(std::string name, std::filesystem::path S::*member, std::string doc) {
  const std::string key = name;
  return {std::move(name), "path", std::move(doc),
          [=](yaml::Map& map, S& s, const Context& context) {
            read_path(map, key, s.*member, context.base);
          },
          [=](YAML::Emitter& out, const S& s) { out << (s.*member).string(); }};
}

// A nested mapping whose keys `section` declares, read into and written from what `part`
// gives of S.
template <class S, class Sub, class Part>
Key<S> nested(std::string name, Part part, std::shared_ptr<const Section<Sub>> section) {
  const std::string key = name;
  Key<S> out{std::move(name), "mapping", "",
             [=](yaml::Map& map, S& s, const Context& context) {
               if (YAML::Node node = map.get(key); node.IsDefined()) {
                 yaml::Map sub(map.doc(), node, map.key(key));
                 read(*section, sub, part(s), context);
               }
             },
             [=](YAML::Emitter& out, const S& s) { write(*section, out, part(s)); }};
  out.describe_children = [=](const std::string& prefix, std::vector<KeyDescription>& rows) {
    describe(*section, prefix, rows);
  };
  return out;
}

// A nested mapping whose keys fill S itself (search.levels: the levels are SearchConfig's).
template <class S>
Key<S> group(std::string name, std::shared_ptr<const Section<S>> section) {
  return nested<S, S>(std::move(name), [](auto& s) -> auto& { return s; }, std::move(section));
}

// A nested mapping whose keys `section` declares, for the member it fills.
template <class S, class Sub>
Key<S> section(std::string name, Sub S::*member, std::shared_ptr<const Section<Sub>> section) {
  return nested<S, Sub>(std::move(name), [member](auto& s) -> auto& { return s.*member; },
                        std::move(section));
}

}  // namespace r3::config::schema

namespace r3::config {
// Reads a whole tune.yaml document into `config` (whose file is set).
void read_document(const YAML::Node& root, TuneConfig& config);
}  // namespace r3::config
