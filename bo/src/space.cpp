#include "r3/bo/space.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <unordered_set>

#include "r3/error.hpp"

namespace r3::bo {

Parameter Parameter::ordinal(std::string name, std::vector<double> values) {
  if (values.empty()) throw Error("parameter '" + name + "': an ordinal parameter needs values");
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  Parameter p;
  p.name = std::move(name);
  p.kind = Kind::ordinal;
  for (double v : values) {
    std::ostringstream text;
    text << v;
    p.labels.push_back(text.str());
  }
  p.numbers = std::move(values);
  return p;
}

Parameter Parameter::categorical(std::string name, std::vector<std::string> labels) {
  if (labels.empty()) throw Error("parameter '" + name + "': a categorical parameter needs values");
  std::set<std::string> distinct(labels.begin(), labels.end());
  if (distinct.size() != labels.size()) {
    throw Error("parameter '" + name + "': categorical values must be distinct");
  }
  Parameter p;
  p.name = std::move(name);
  p.kind = Kind::categorical;
  p.labels = std::move(labels);
  return p;
}

Parameter Parameter::sequence(std::string name, std::vector<std::string> pool,
                              std::size_t max_length, bool repeat) {
  if (pool.empty()) throw Error("parameter '" + name + "': a sequence needs a pool of items");
  if (!repeat && max_length > pool.size()) max_length = pool.size();
  Parameter p;
  p.name = std::move(name);
  p.kind = Kind::sequence;
  p.pool = std::move(pool);
  p.max_length = max_length;
  p.repeat = repeat;
  return p;
}

Parameter& Parameter::when(std::string_view text) {
  condition = Expression::parse(text);
  return *this;
}

std::size_t Parameter::choices() const {
  return kind == Kind::ordinal ? numbers.size() : labels.size();
}

Hash128 Configuration::hash() const {
  Hasher hasher;
  for (const std::vector<int>& value : values) {
    std::uint64_t size = value.size();
    hasher.update(&size, sizeof size);
    hasher.update(value.data(), value.size() * sizeof(int));
  }
  return hasher.digest();
}

Space::Space(std::vector<Parameter> parameters, std::vector<std::string> constraints,
             std::map<std::string, double> constants)
    : parameters_(std::move(parameters)), constants_(std::move(constants)) {
  std::set<std::string> known;
  for (const auto& [name, value] : constants_) known.insert(name);
  for (const Parameter& p : parameters_) {
    if (p.condition) {
      for (const std::string& name : p.condition->names()) {
        if (!known.contains(name)) {
          throw Error("parameter '" + p.name + "': its condition '" + p.condition->text() +
                      "' refers to '" + name +
                      "', which is not an earlier parameter or a constant");
        }
      }
    }
    if (!known.insert(p.name).second) throw Error("parameter '" + p.name + "' is defined twice");
  }
  for (const std::string& text : constraints) {
    Expression expression = Expression::parse(text);
    for (const std::string& name : expression.names()) {
      if (!known.contains(name)) {
        throw Error("constraint '" + text + "' refers to '" + name +
                    "', which is neither a parameter nor a constant");
      }
    }
    constraints_.push_back(std::move(expression));
  }
  find_quantities();
}

std::optional<std::size_t> Space::find(std::string_view name) const {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (parameters_[i].name == name) return i;
  }
  return std::nullopt;
}

std::optional<Value> Space::value(const Configuration& c, std::size_t i) const {
  const Parameter& p = parameters_[i];
  if (i >= c.values.size() || c.values[i].empty()) {
    if (p.kind == Kind::sequence && i < c.values.size() && condition_holds(c, i)) return 0.0;
    return std::nullopt;
  }
  switch (p.kind) {
    case Kind::ordinal:
      return p.numbers[static_cast<std::size_t>(c.values[i][0])];
    case Kind::categorical:
      return p.labels[static_cast<std::size_t>(c.values[i][0])];
    case Kind::sequence:
      return static_cast<double>(c.values[i].size());
  }
  return std::nullopt;
}

Expression::Lookup Space::lookup(const Configuration& c) const {
  return [this, &c](const std::string& name) -> std::optional<Value> {
    if (auto it = constants_.find(name); it != constants_.end()) return it->second;
    if (auto index = find(name)) return value(c, *index);
    return std::nullopt;
  };
}

bool Space::condition_holds(const Configuration& c, std::size_t i) const {
  const Parameter& p = parameters_[i];
  return !p.condition || p.condition->holds(lookup(c));
}

bool Space::satisfies_constraints(const Configuration& c) const {
  auto names = lookup(c);
  return std::all_of(constraints_.begin(), constraints_.end(),
                     [&](const Expression& e) { return e.holds(names); });
}

bool Space::valid(const Configuration& c) const {
  if (c.values.size() != parameters_.size()) return false;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Parameter& p = parameters_[i];
    const std::vector<int>& v = c.values[i];
    const bool active = condition_holds(c, i);
    if (p.kind == Kind::sequence) {
      if (!active && !v.empty()) return false;
      if (v.size() > p.max_length) return false;
      for (int item : v) {
        if (item < 0 || static_cast<std::size_t>(item) >= p.pool.size()) return false;
      }
      if (!p.repeat && std::set<int>(v.begin(), v.end()).size() != v.size()) return false;
    } else {
      if (active != (v.size() == 1)) return false;
      if (active && (v[0] < 0 || static_cast<std::size_t>(v[0]) >= p.choices())) return false;
    }
  }
  return satisfies_constraints(c);
}

std::vector<int> Space::random_value(std::size_t i, std::mt19937_64& rng) const {
  const Parameter& p = parameters_[i];
  if (p.kind != Kind::sequence) {
    return {static_cast<int>(std::uniform_int_distribution<std::size_t>(0, p.choices() - 1)(rng))};
  }
  std::size_t length = std::uniform_int_distribution<std::size_t>(0, p.max_length)(rng);
  std::vector<int> items;
  if (p.repeat) {
    std::uniform_int_distribution<int> item(0, static_cast<int>(p.pool.size()) - 1);
    for (std::size_t k = 0; k < length; ++k) items.push_back(item(rng));
  } else {
    std::vector<int> all(p.pool.size());
    for (std::size_t k = 0; k < all.size(); ++k) all[k] = static_cast<int>(k);
    std::shuffle(all.begin(), all.end(), rng);
    items.assign(all.begin(), all.begin() + static_cast<long>(length));
  }
  return items;
}

void Space::settle(Configuration& c, std::size_t changed, std::mt19937_64& rng) const {
  for (std::size_t i = changed + 1; i < parameters_.size(); ++i) {
    if (!parameters_[i].condition) continue;
    const bool active = condition_holds(c, i);
    const bool has_value = !c.values[i].empty() || parameters_[i].kind == Kind::sequence;
    if (!active) {
      c.values[i].clear();
    } else if (!has_value) {
      c.values[i] = random_value(i, rng);
    }
  }
}

std::optional<Configuration> Space::draw(std::mt19937_64& rng, std::size_t attempts) const {
  for (std::size_t attempt = 0; attempt < attempts; ++attempt) {
    Configuration c;
    c.values.resize(parameters_.size());
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      if (condition_holds(c, i)) c.values[i] = random_value(i, rng);
    }
    if (satisfies_constraints(c)) return c;
  }
  return std::nullopt;
}

Configuration Space::sample(std::mt19937_64& rng) const {
  if (std::optional<Configuration> c = draw(rng, 10000)) return std::move(*c);
  throw Error(
      "no configuration meets the constraints in 10000 random draws; the constraints "
      "leave (almost) nothing of the space");
}

Configuration Space::from_unit(const std::vector<double>& u, std::mt19937_64& rng) const {
  Configuration c;
  c.values.resize(parameters_.size());
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (!condition_holds(c, i)) continue;
    const Parameter& p = parameters_[i];
    const double x = std::clamp(i < u.size() ? u[i] : 0.5, 0.0, std::nextafter(1.0, 0.0));
    if (p.kind != Kind::sequence) {
      c.values[i] = {static_cast<int>(x * static_cast<double>(p.choices()))};
    } else {
      std::vector<int> items = random_value(i, rng);
      items.resize(std::min(items.size(),
                            static_cast<std::size_t>(x * static_cast<double>(p.max_length + 1))));
      c.values[i] = items;
    }
  }
  return c;
}

double Space::distance_to_unit(const Configuration& c, const std::vector<double>& u) const {
  double distance = 0;
  for (std::size_t i = 0; i < parameters_.size() && i < c.values.size(); ++i) {
    const Parameter& p = parameters_[i];
    const std::vector<int>& v = c.values[i];
    if (p.kind != Kind::sequence && v.empty()) continue;  // inactive: no place in its range
    const double place =
        p.kind != Kind::sequence
            ? (v[0] + 0.5) / static_cast<double>(p.choices())
            : (static_cast<double>(v.size()) + 0.5) / static_cast<double>(p.max_length + 1);
    distance += std::abs((i < u.size() ? u[i] : 0.5) - place);
  }
  return distance;
}

std::vector<double> Space::centre_unit() const {
  std::vector<double> centre;
  centre.reserve(parameters_.size());
  for (const Parameter& p : parameters_) {
    const std::size_t places = p.kind != Kind::sequence ? p.choices() : p.max_length + 1;
    centre.push_back((static_cast<double>((places - 1) / 2) + 0.5) / static_cast<double>(places));
  }
  return centre;
}

std::vector<Configuration> Space::neighbours(const Configuration& c, std::mt19937_64& rng,
                                             bool every_value) const {
  std::vector<Configuration> out;
  std::unordered_set<Hash128> seen{c.hash()};
  auto add = [&](Configuration n, std::size_t changed) {
    settle(n, changed, rng);
    // Swapping equal items or replacing an item by itself changes nothing: each neighbour once.
    if (valid(n) && seen.insert(n.hash()).second) out.push_back(std::move(n));
  };
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Parameter& p = parameters_[i];
    const std::vector<int>& v = c.values[i];
    if (p.kind == Kind::ordinal && v.size() == 1 && !every_value) {
      for (int step : {-1, 1}) {
        int moved = v[0] + step;
        if (moved < 0 || moved >= static_cast<int>(p.choices())) continue;
        Configuration n = c;
        n.values[i] = {moved};
        add(std::move(n), i);
      }
    } else if (p.kind != Kind::sequence && v.size() == 1) {  // categorical, or every value
      for (int other = 0; other < static_cast<int>(p.choices()); ++other) {
        if (other == v[0]) continue;
        Configuration n = c;
        n.values[i] = {other};
        add(std::move(n), i);
      }
    } else if (p.kind == Kind::sequence && condition_holds(c, i)) {
      const int pool = static_cast<int>(p.pool.size());
      std::uniform_int_distribution<int> any_item(0, pool - 1);
      // Every removal and swap; insertions and replacements with one random item per position.
      for (std::size_t k = 0; k < v.size(); ++k) {
        Configuration removed = c;
        removed.values[i].erase(removed.values[i].begin() + static_cast<long>(k));
        add(std::move(removed), i);
        if (k + 1 < v.size()) {
          Configuration swapped = c;
          std::swap(swapped.values[i][k], swapped.values[i][k + 1]);
          add(std::move(swapped), i);
        }
        Configuration replaced = c;
        replaced.values[i][k] = any_item(rng);
        if (replaced.values[i][k] != v[k]) add(std::move(replaced), i);
      }
      if (v.size() < p.max_length) {
        for (std::size_t k = 0; k <= v.size(); ++k) {
          Configuration inserted = c;
          inserted.values[i].insert(inserted.values[i].begin() + static_cast<long>(k),
                                    any_item(rng));
          add(std::move(inserted), i);
        }
      }
    }
  }
  return out;
}

std::string Space::describe(const Configuration& c) const {
  // Also used for messages about invalid configurations: never trust an index.
  auto item = [](const std::vector<std::string>& names, int index) {
    return index >= 0 && static_cast<std::size_t>(index) < names.size()
               ? names[static_cast<std::size_t>(index)]
               : "<index " + std::to_string(index) + ">";
  };
  std::string out;
  for (std::size_t i = 0; i < parameters_.size() && i < c.values.size(); ++i) {
    const Parameter& p = parameters_[i];
    const std::vector<int>& v = c.values[i];
    if (p.kind != Kind::sequence && v.empty()) continue;
    if (p.kind == Kind::sequence && v.empty() && !condition_holds(c, i)) continue;
    if (!out.empty()) out += ' ';
    out += p.name + "=";
    if (p.kind == Kind::sequence) {
      out += '[';
      for (std::size_t k = 0; k < v.size(); ++k) {
        if (k > 0) out += ',';
        out += item(p.pool, v[k]);
      }
      out += ']';
    } else {
      out += item(p.labels, v[0]);
    }
  }
  return out;
}

std::optional<std::vector<Configuration>> Space::enumerate(std::size_t limit) const {
  std::size_t points = 1;
  for (const Parameter& p : parameters_) {
    if (p.kind == Kind::sequence || p.choices() == 0) return std::nullopt;
    if (points > limit / p.choices()) return std::nullopt;
    points *= p.choices();
  }
  std::vector<Configuration> valid_points;
  std::set<Hash128> seen;
  std::vector<std::size_t> index(parameters_.size(), 0);
  for (std::size_t n = 0; n < points; ++n) {
    Configuration c;
    c.values.resize(parameters_.size());
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      // Inactive parameters have no value: the combinations that differ only there are one.
      if (condition_holds(c, i)) c.values[i] = {static_cast<int>(index[i])};
    }
    if (satisfies_constraints(c) && seen.insert(c.hash()).second) valid_points.push_back(c);
    for (std::size_t i = parameters_.size(); i-- > 0;) {  // the next combination
      if (++index[i] < parameters_[i].choices()) break;
      index[i] = 0;
    }
  }
  return valid_points;
}

double Space::log10_size() const {
  double total = 0;
  for (const Parameter& p : parameters_) {
    if (p.kind != Kind::sequence) {
      total += std::log10(static_cast<double>(p.choices()));
    } else {
      double sequences = 0;  // sum over lengths of pool^length (an upper bound without repeat)
      for (std::size_t length = 0; length <= p.max_length; ++length) {
        sequences += std::pow(static_cast<double>(p.pool.size()), static_cast<double>(length));
      }
      total += std::log10(sequences);
    }
  }
  return total;
}

}  // namespace r3::bo
