#include "r3/bo/table.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <unordered_set>

#include "r3/error.hpp"

namespace r3::bo {
namespace {

std::string trim(std::string_view text) {
  std::size_t begin = text.find_first_not_of(" \t\r");
  std::size_t end = text.find_last_not_of(" \t\r");
  return begin == std::string_view::npos ? "" : std::string(text.substr(begin, end - begin + 1));
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, ',');) fields.push_back(trim(field));
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

std::optional<double> number(const std::string& text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

}  // namespace

std::vector<std::string> load_constraints(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read the constraints", in_file(path.string()));
  std::vector<std::string> constraints;
  for (std::string line; std::getline(in, line);) {
    std::string text = trim(line);
    if (!text.empty() && text[0] != '#') constraints.push_back(std::move(text));
  }
  return constraints;
}

Table Table::load_csv(const std::filesystem::path& path,
                      const std::vector<std::string>& constraints) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read the table", in_file(path.string()));
  auto fail = [&](int line, const std::string& message) -> Error {
    ErrorContext context = in_file(path.string());
    context.line = line;
    return Error(message, context);
  };
  std::vector<std::string> header;
  std::vector<std::pair<int, std::vector<std::string>>> rows;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    std::string text = trim(line);
    if (text.empty() || text[0] == '#') continue;
    std::vector<std::string> fields = split(text);
    if (header.empty()) {
      header = fields;
      continue;
    }
    if (fields.size() != header.size()) {
      throw fail(line_number, "expected " + std::to_string(header.size()) + " fields, found " +
                                  std::to_string(fields.size()));
    }
    rows.emplace_back(line_number, std::move(fields));
  }
  auto time_column = std::find(header.begin(), header.end(), "time");
  if (header.empty() || time_column == header.end()) {
    throw fail(0, "the table needs a header with a 'time' column");
  }
  if (rows.empty()) throw fail(0, "the table has no rows");
  const std::size_t time_index = static_cast<std::size_t>(time_column - header.begin());

  // Each parameter column's distinct values: numeric -> ordinal, otherwise categorical.
  std::vector<Parameter> parameters;
  std::vector<std::size_t> columns;
  for (std::size_t c = 0; c < header.size(); ++c) {
    if (c == time_index) continue;
    columns.push_back(c);
    bool numeric = true;
    std::vector<std::string> labels;
    std::vector<double> values;
    for (const auto& [line, fields] : rows) {
      if (std::find(labels.begin(), labels.end(), fields[c]) == labels.end())
        labels.push_back(fields[c]);
      auto value = number(fields[c]);
      numeric = numeric && value.has_value();
      if (value) values.push_back(*value);
    }
    parameters.push_back(numeric ? Parameter::ordinal(header[c], values)
                                 : Parameter::categorical(header[c], labels));
  }
  Table table = [&] {
    try {
      return Table{Space(parameters, constraints)};
    } catch (const Error& e) {
      throw fail(0, "the constraints do not fit the table: " + e.message());
    }
  }();
  table.path_ = path;
  table.optimum_ = std::numeric_limits<double>::infinity();
  std::unordered_map<Hash128, int> first_line;
  for (const auto& [line, fields] : rows) {
    Configuration c;
    for (std::size_t k = 0; k < columns.size(); ++k) {
      const Parameter& p = parameters[k];
      const std::string& field = fields[columns[k]];
      int index = 0;
      if (p.kind == Kind::ordinal) {
        double value = *number(field);
        index = static_cast<int>(std::lower_bound(p.numbers.begin(), p.numbers.end(), value) -
                                 p.numbers.begin());
      } else {
        index =
            static_cast<int>(std::find(p.labels.begin(), p.labels.end(), field) - p.labels.begin());
      }
      c.values.push_back({index});
    }
    if (!table.space_.satisfies_constraints(c)) {
      ++table.excluded_rows_;
      continue;
    }
    const std::string& time = fields[time_index];
    std::optional<double> value;
    if (time != "fail") {
      value = number(time);
      if (!value || *value <= 0)
        throw fail(line, "time must be a positive number or 'fail', not '" + time + "'");
      table.optimum_ = std::min(table.optimum_, *value);
    } else {
      ++table.failed_rows_;
    }
    auto [it, inserted] = first_line.emplace(c.hash(), line);
    if (!inserted) {
      throw fail(line, "the same configuration as on line " + std::to_string(it->second));
    }
    table.times_.emplace(c.hash(), value);
    ++table.rows_;
  }
  if (!std::isfinite(table.optimum_))
    throw fail(0, constraints.empty() ? "every configuration in the table failed"
                                      : "every configuration the constraints allow failed");
  // The population random search draws from: the space's points that meet the constraints,
  // counted one by one (a table's columns are ordinal or categorical: an odometer over them).
  if (constraints.empty()) {
    table.points_ = 1;
    for (const Parameter& p : parameters) table.points_ *= p.choices();
  } else {
    constexpr double kCountedSpace = 1e8;
    double product = 1;
    for (const Parameter& p : parameters) product *= static_cast<double>(p.choices());
    if (product > kCountedSpace)
      throw fail(0,
                 "the table's space has more than 10^8 points: too many to count the "
                 "configurations its constraints allow");
    Configuration c;
    for (std::size_t k = 0; k < parameters.size(); ++k) c.values.push_back({0});
    while (true) {
      table.points_ += table.space_.satisfies_constraints(c) ? 1 : 0;
      std::size_t k = 0;
      for (; k < parameters.size(); ++k) {
        if (++c.values[k][0] < static_cast<int>(parameters[k].choices())) break;
        c.values[k][0] = 0;
      }
      if (k == parameters.size()) break;
    }
  }
  return table;
}

Outcome Table::evaluate(const Configuration& configuration) const {
  auto it = times_.find(configuration.hash());
  if (it == times_.end()) return Outcome::failed("not in the table");
  if (!it->second) return Outcome::failed("failed when measured");
  return Outcome::success(*it->second);
}

Trace run_bayesian(const Table& table, const Options& options, std::size_t budget,
                   std::size_t batch, double stop_at) {
  Optimizer optimizer(table.space(), options);
  Trace trace;
  auto done = [&] {
    return !trace.empty() && *std::min_element(trace.begin(), trace.end()) <= stop_at;
  };
  while (trace.size() < budget && !done()) {
    std::vector<Configuration> proposals =
        optimizer.propose(std::min(batch, budget - trace.size()));
    if (proposals.empty()) break;
    for (const Configuration& c : proposals) {
      Outcome outcome = table.evaluate(c);
      optimizer.observe(c, outcome);
      trace.push_back(outcome.ok ? outcome.time : std::numeric_limits<double>::infinity());
    }
  }
  return trace;
}

Trace run_random(const Table& table, std::uint64_t seed, std::size_t budget, double stop_at) {
  std::mt19937_64 rng(seed);
  std::unordered_set<Hash128> seen;
  Trace trace;
  for (int misses = 0; trace.size() < budget && misses < 100000;) {
    if (!trace.empty() && trace.back() <= stop_at) break;
    Configuration c = table.space().sample(rng);
    if (!seen.insert(c.hash()).second) {
      ++misses;
      continue;
    }
    Outcome outcome = table.evaluate(c);
    trace.push_back(outcome.ok ? outcome.time : std::numeric_limits<double>::infinity());
  }
  return trace;
}

std::size_t Table::count_at_most(double time) const {
  std::size_t count = 0;
  for (const auto& [hash, value] : times_) count += value && *value <= time ? 1 : 0;
  return count;
}

double random_search_median(std::size_t points, std::size_t good) {
  if (good == 0) return std::numeric_limits<double>::infinity();
  double miss = 1.0;  // probability that the first k draws all miss
  for (std::size_t k = 0; k < points; ++k) {
    miss *= static_cast<double>(points - good - k) / static_cast<double>(points - k);
    if (1.0 - miss >= 0.5) return static_cast<double>(k + 1);
  }
  return static_cast<double>(points);
}

std::optional<std::size_t> evaluations_to_reach(const Trace& trace, double target) {
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (trace[i] <= target) return i + 1;
  }
  return std::nullopt;
}

}  // namespace r3::bo
