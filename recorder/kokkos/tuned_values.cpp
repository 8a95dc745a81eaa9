#include "tuned_values.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace r3::kokkos {
namespace {

namespace fs = std::filesystem;

std::string where(const fs::path& file, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  std::string at = file.string();
  if (mark.line >= 0)
    at += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  return at;
}

bool same_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The entry named `name` in `values`: exactly, else ignoring case (TILE_X answers tile_x).
const std::pair<const std::string, std::string>* lookup(const KernelValues& k,
                                                        std::string_view name) {
  if (auto it = k.values.find(std::string(name)); it != k.values.end()) return &*it;
  for (const auto& entry : k.values)
    if (same_ignoring_case(entry.first, name)) return &entry;
  return nullptr;
}

KernelValues kernel_from(const YAML::Node& item, const fs::path& file) {
  KernelValues k;
  k.file = file;
  YAML::Node name = item.IsScalar() ? item : item["name"];
  if (!name || !name.IsScalar() || name.Scalar().empty())
    throw TunedValuesError(where(file, item) + ": kernels[]: every kernel needs a name");
  k.label = name.Scalar();
  if (!item.IsMap()) return k;
  if (YAML::Node block = item["block"]; block && !(block.IsSequence() && block.size() == 0)) {
    if (!block.IsSequence() || block.size() != 3)
      throw TunedValuesError(where(file, block) + ": kernels[].block of '" + k.label +
                             "': expected [x, y, z]");
    std::string xyz[3];
    for (std::size_t i = 0; i < 3; ++i) {
      if (!block[i].IsScalar() || !as_integer(block[i].Scalar()) ||
          *as_integer(block[i].Scalar()) < 1)
        throw TunedValuesError(where(file, block[i]) + ": kernels[].block of '" + k.label +
                               "': expected positive integers");
      xyz[i] = block[i].Scalar();
    }
    k.values["vector_length"] = xyz[0];
    k.values["team_size"] = xyz[1];
    for (int i = 0; i < 3; ++i) k.values["tile_size_" + std::to_string(i)] = xyz[i];
  }
  if (YAML::Node defines = item["defines"]) {
    if (!defines.IsMap())
      throw TunedValuesError(where(file, defines) + ": kernels[].defines of '" + k.label +
                             "': expected a mapping NAME: VALUE");
    for (const auto& entry : defines) {
      if (!entry.second.IsScalar())
        throw TunedValuesError(where(file, entry.second) + ": kernels[].defines." +
                               entry.first.as<std::string>() + " of '" + k.label +
                               "': expected a single value");
      k.values[entry.first.as<std::string>()] = entry.second.Scalar();
    }
  }
  return k;
}

}  // namespace

std::optional<std::int64_t> as_integer(std::string_view text) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && end == text.data() + text.size()) return value;
  // "32.0" is an integer too; "32.5" is not.
  if (auto number = as_number(text);
      number && std::floor(*number) == *number && std::fabs(*number) < 9.0e15)
    return static_cast<std::int64_t>(*number);
  return std::nullopt;
}

std::optional<double> as_number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::string copy(text);
  char* end = nullptr;
  double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

TunedValues TunedValues::parse(std::string_view yaml, const fs::path& file) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    throw TunedValuesError(file.string() + ":" + std::to_string(e.mark.line + 1) + ":" +
                           std::to_string(e.mark.column + 1) + ": not YAML: " + e.msg);
  }
  if (!root.IsMap() || !root["kernels"])
    throw TunedValuesError(file.string() +
                           ": no 'kernels' list: not an r3 result (best.yaml) or tune.yaml");
  YAML::Node kernels = root["kernels"];
  if (!kernels.IsSequence())
    throw TunedValuesError(where(file, kernels) + ": kernels: expected a list");
  TunedValues result;
  for (const auto& item : kernels) result.add(kernel_from(item, file));
  return result;
}

TunedValues TunedValues::load(const fs::path& path) {
  std::error_code ec;
  std::vector<fs::path> files;
  if (fs::is_directory(path, ec)) {
    if (fs::is_regular_file(path / "best.yaml", ec)) files.push_back(path / "best.yaml");
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      fs::path best = entry.path() / "best.yaml";
      if (entry.is_directory(ec) && fs::is_regular_file(best, ec)) files.push_back(best);
    }
    std::sort(files.begin(), files.end());
    if (files.empty())
      throw TunedValuesError(path.string() +
                             ": a directory without best.yaml or <kernel>/best.yaml (expected a "
                             "tuning run's results directory)");
  } else {
    files.push_back(path);
  }
  TunedValues all;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    if (!in) throw TunedValuesError(file.string() + ": cannot be read");
    std::stringstream text;
    text << in.rdbuf();
    for (KernelValues& k : parse(text.str(), file).kernels_) all.add(std::move(k));
  }
  return all;
}

void TunedValues::add(KernelValues kernel) {
  for (const KernelValues& k : kernels_) {
    if (k.label == kernel.label)
      throw TunedValuesError(kernel.file.string() + ": kernel '" + kernel.label +
                             "' has tuned values in " + k.file.string() +
                             " already; give one result per kernel");
  }
  kernels_.push_back(std::move(kernel));
}

std::vector<fs::path> TunedValues::files() const {
  std::vector<fs::path> files;
  for (const KernelValues& k : kernels_)
    if (std::find(files.begin(), files.end(), k.file) == files.end()) files.push_back(k.file);
  return files;
}

std::optional<Found> TunedValues::find(std::string_view variable,
                                       std::string_view context_label) const {
  auto found = [](const KernelValues& k, const std::pair<const std::string, std::string>* e) {
    return Found{&k, e->first, e->second};
  };
  // Named after its kernel, as Kokkos' tuners do; the longest label wins ("a_b" over "a").
  const KernelValues* best = nullptr;
  const std::pair<const std::string, std::string>* best_entry = nullptr;
  for (const KernelValues& k : kernels_) {
    if (variable.size() <= k.label.size() + 1 || variable.substr(0, k.label.size()) != k.label ||
        variable[k.label.size()] != '_')
      continue;
    if (best && best->label.size() >= k.label.size()) continue;
    if (auto* e = lookup(k, variable.substr(k.label.size() + 1))) {
      best = &k;
      best_entry = e;
    }
  }
  if (best) return found(*best, best_entry);
  // The kernel of the request's context.
  if (!context_label.empty()) {
    for (const KernelValues& k : kernels_) {
      if (k.label != context_label) continue;
      if (auto* e = lookup(k, variable)) return found(k, e);
      return std::nullopt;
    }
  }
  // The only kernel that has a value of that name.
  std::optional<Found> only;
  for (const KernelValues& k : kernels_) {
    if (auto* e = lookup(k, variable)) {
      if (only) return std::nullopt;  // ambiguous: leave Kokkos' default
      only = found(k, e);
    }
  }
  return only;
}

}  // namespace r3::kokkos
