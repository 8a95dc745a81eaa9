// libr3kokkos.so: r3's Kokkos Tools connector. Kokkos loads it from KOKKOS_TOOLS_LIBS (Kokkos 4)
// or KOKKOS_PROFILE_LIBRARY (Kokkos 3); `r3 record --kokkos` and `r3 apply` set both.
//
//  - Labels: it keeps the label of the parallel region being launched on each thread
//    (r3_kokkos_current_label(), for recorders) and counts launches per label.
//  - Tuning: with R3_KOKKOS_TUNED naming an r3 result (a best.yaml or a results directory), it
//    answers Kokkos' tuning requests with the tuned values (team size, vector length, tile sizes,
//    the application's own variables) and leaves every other request at Kokkos' default. Kokkos'
//    own team-size tuner (--kokkos-tune-internals) asks for fractions: with
//    R3_KOKKOS_TEAM_LIMITS (written by `r3 apply`) they are computed (team_tuner.hpp).
//
// Nothing here throws into Kokkos or exits: problems are logged to stderr once, counted, and
// summarised when Kokkos finalises.
#include <impl/Kokkos_Profiling_C_Interface.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "connector.h"
#include "team_tuner.hpp"
#include "tuned_values.hpp"

namespace {

using r3::kokkos::TeamLimit;
using r3::kokkos::TunedValues;

// A declared variable, with its candidates copied: Kokkos may free its own copy.
struct Variable {
  std::string name;
  Kokkos_Tools_VariableInfo info{};
  std::vector<std::int64_t> int_set;
  std::vector<double> double_set;
  std::vector<std::string> string_set;
};

struct State {
  std::mutex mutex;
  bool tuning_wanted = false;  // R3_KOKKOS_TUNED is set
  bool tuned_loaded = false;
  TunedValues tuned;
  std::string tuned_path;
  std::vector<TeamLimit> team_limits;  // from `r3 apply` (R3_KOKKOS_TEAM_LIMITS)
  std::map<std::size_t, Variable> outputs;
  std::map<std::size_t, std::string> inputs;
  std::map<std::string, std::uint64_t> launches;  // label -> parallel regions launched
  std::vector<std::string> regions;               // profile region stack (all threads)
  std::set<std::string> reported;                 // messages already printed once
  std::uint64_t requests = 0, applied = 0, refused = 0, unanswered = 0;
  std::atomic<std::uint64_t> internal_errors{0};  // counted where the mutex may not be held
  std::uint64_t next_kernel_id = 1;
};

State& state() {
  static State* s = new State;  // never destroyed: Kokkos may call us during exit
  return *s;
}

thread_local std::string current_label;

// The fraction that picks the middle of a list of Kokkos' own tuners (index n / 2).
constexpr double kMiddleFraction = 0.5;

// Seen with Kokkos 4.6.01 on CUDA, whatever a tool answers: MDRangePolicy::impl_change_tile_size,
// which Kokkos' MDRange tuner calls, runs init_helper again without resetting m_num_tiles, so the
// policy's tile count becomes the product of the old and the new one, and a parallel_reduce over
// it visits every tile that many times (policies.cpp's sum_u came out 512 times too large). A
// parallel_for iterates by tile_end and is not affected.
constexpr const char* kMDRangeTunerWarning =
    "warning: Kokkos' MDRange tuner sets a tile with MDRangePolicy::impl_change_tile_size, which "
    "(Kokkos 4.6.01) multiplies the policy's tile count instead of resetting it: an MDRange "
    "parallel_reduce whose tile it sets adds each point many times over. Check such results, or "
    "give MDRange tiles through the application's own tuning variables";

bool verbose() {
  const char* level = std::getenv("R3_LOG_LEVEL");
  return level && (!std::strcmp(level, "debug") || !std::strcmp(level, "trace"));
}

// Prints a message the first time it is seen (callers hold the mutex).
void report_once(State& s, const std::string& message) {
  if (s.reported.insert(message).second) std::fprintf(stderr, "r3 kokkos: %s\n", message.c_str());
}

Variable copy_variable(const char* name, const Kokkos_Tools_VariableInfo* info) {
  Variable v;
  v.name = name ? name : "";
  if (!info) return v;
  v.info = *info;
  v.info.toolProvidedInfo = nullptr;
  if (info->valueQuantity == kokkos_value_set) {
    const std::size_t n = info->candidates.set.size;
    for (std::size_t i = 0; i < n; ++i) {
      switch (info->type) {
        case kokkos_value_int64:
          v.int_set.push_back(info->candidates.set.values.int_value[i]);
          break;
        case kokkos_value_double:
          v.double_set.push_back(info->candidates.set.values.double_value[i]);
          break;
        case kokkos_value_string:
          v.string_set.emplace_back(info->candidates.set.values.string_value[i]);
          break;
      }
    }
  }
  return v;
}

bool in_range(const Kokkos_Tools_ValueRange& r, double value, bool integer) {
  const double lower = integer ? double(r.lower.int_value) : r.lower.double_value;
  const double upper = integer ? double(r.upper.int_value) : r.upper.double_value;
  if (value < lower || (r.openLower && value == lower)) return false;
  if (value > upper || (r.openUpper && value == upper)) return false;
  return true;
}

std::string describe_candidates(const Variable& v) {
  std::string out;
  if (v.info.valueQuantity == kokkos_value_range) {
    const bool integer = v.info.type == kokkos_value_int64;
    const auto& r = v.info.candidates.range;
    out = std::string(r.openLower ? "(" : "[") +
          (integer ? std::to_string(r.lower.int_value) : std::to_string(r.lower.double_value)) +
          ", " +
          (integer ? std::to_string(r.upper.int_value) : std::to_string(r.upper.double_value)) +
          (r.openUpper ? ")" : "]");
    return out;
  }
  out = "{";
  for (auto x : v.int_set) out += (out.size() > 1 ? ", " : "") + std::to_string(x);
  for (auto x : v.double_set) out += (out.size() > 1 ? ", " : "") + std::to_string(x);
  for (const auto& x : v.string_set) out += (out.size() > 1 ? ", " : "") + x;
  return out + "}";
}

// Writes `text` into `value` as `v` wants it; an empty string on success, else why not.
std::string assign(const Variable& v, const std::string& text, Kokkos_Tools_VariableValue& value) {
  const bool is_set = v.info.valueQuantity == kokkos_value_set;
  const bool is_range = v.info.valueQuantity == kokkos_value_range;
  switch (v.info.type) {
    case kokkos_value_int64: {
      auto x = r3::kokkos::as_integer(text);
      if (!x) return "not an integer";
      if (is_set && std::find(v.int_set.begin(), v.int_set.end(), *x) == v.int_set.end())
        return "not one of the candidates " + describe_candidates(v);
      if (is_range && !in_range(v.info.candidates.range, double(*x), true))
        return "outside the range " + describe_candidates(v);
      value.value.int_value = *x;
      return "";
    }
    case kokkos_value_double: {
      auto x = r3::kokkos::as_number(text);
      if (!x) return "not a number";
      if (is_set && std::find(v.double_set.begin(), v.double_set.end(), *x) == v.double_set.end())
        return "not one of the candidates " + describe_candidates(v);
      if (is_range && !in_range(v.info.candidates.range, *x, false))
        return "outside the range " + describe_candidates(v);
      value.value.double_value = *x;
      return "";
    }
    case kokkos_value_string: {
      if (text.size() >= KOKKOS_TOOLS_TUNING_STRING_LENGTH)
        return "longer than Kokkos' " + std::to_string(KOKKOS_TOOLS_TUNING_STRING_LENGTH - 1) +
               " characters";
      if (is_set && std::find(v.string_set.begin(), v.string_set.end(), text) == v.string_set.end())
        return "not one of the candidates " + describe_candidates(v);
      std::memset(value.value.string_value, 0, KOKKOS_TOOLS_TUNING_STRING_LENGTH);
      std::memcpy(value.value.string_value, text.data(), text.size());
      return "";
    }
  }
  return "of a value type this connector does not know";
}

// The label of a variable of Kokkos' team-size tuner ("<label>_vector_length",
// "<label>_team_size": a fraction in [0, 0.999]), and which of the two it is; nullopt otherwise.
std::optional<std::pair<std::string, bool>> team_tuner_variable(const Variable& v) {
  if (v.info.type != kokkos_value_double || v.info.valueQuantity != kokkos_value_range ||
      v.info.candidates.range.upper.double_value > 1.0)
    return std::nullopt;
  for (const std::string suffix : {"_vector_length", "_team_size"}) {
    if (v.name.size() > suffix.size() &&
        v.name.compare(v.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return std::make_pair(v.name.substr(0, v.name.size() - suffix.size()),
                            suffix == "_team_size");
  }
  return std::nullopt;
}

// Whether `v` is a variable of one of Kokkos' own tuners: a fraction in [0, 0.999] that picks from
// lists of team shapes or tiles ("<label>_team_size", "<label>_tile_size_0", ...).
bool is_kokkos_tuner_fraction(const Variable& v) {
  if (v.info.type != kokkos_value_double || v.info.valueQuantity != kokkos_value_range ||
      v.info.candidates.range.upper.double_value > 1.0)
    return false;
  return team_tuner_variable(v).has_value() || v.name.find("_tile_size_") != std::string::npos;
}

// Answers a variable of Kokkos' team-size tuner with the fraction that makes it choose the tuned
// block's vector length and team size. False when `v` is no such variable or the result has no
// block for its kernel (then it is answered as any other variable).
bool answer_team_tuner(State& s, const Variable& v, Kokkos_Tools_VariableValue& value) {
  const auto which = team_tuner_variable(v);
  if (!which) return false;
  const auto& [label, is_team_size] = *which;
  const r3::kokkos::KernelValues* kernel = nullptr;
  for (const auto& k : s.tuned.kernels())
    if (k.label == label && k.values.contains("team_size") && k.values.contains("vector_length"))
      kernel = &k;
  if (!kernel) return false;
  const auto vector = r3::kokkos::as_integer(kernel->values.at("vector_length"));
  const auto team = r3::kokkos::as_integer(kernel->values.at("team_size"));
  std::string why;
  std::optional<r3::kokkos::TeamFractions> fractions;
  const TeamLimit* limit = nullptr;
  for (const TeamLimit& l : s.team_limits)
    if (l.label == label) limit = &l;
  if (!limit) {
    why =
        "Kokkos' team-size tuner asks for a fraction of lists that depend on the largest team it "
        "allows the kernel, which `r3 apply` finds on the GPU from the result's capture; it "
        "found none for this kernel";
  } else if (vector && team) {
    fractions = r3::kokkos::team_tuner_fractions(*limit, *vector, *team, why);
  } else {
    why = "the team size and vector length are not both integers";
  }
  if (!fractions) {
    ++s.refused;
    report_once(s, "not applied: " + v.name + " (team size " + kernel->values.at("team_size") +
                       ", vector length " + kernel->values.at("vector_length") + " of '" + label +
                       "', " + kernel->file.string() + "): " + why +
                       "; Kokkos' tuner keeps its first choice (vector length 1, its largest "
                       "team)");
    return true;
  }
  value.value.double_value = is_team_size ? fractions->team_size : fractions->vector_length;
  ++s.applied;
  report_once(s, "applied " + v.name + " = " + std::to_string(value.value.double_value) +
                     " (Kokkos' team-size tuner: vector length " +
                     kernel->values.at("vector_length") + ", team size " +
                     kernel->values.at("team_size") + " of '" + label + "', largest team " +
                     std::to_string(limit->max_team_threads) + " threads, " +
                     kernel->file.string() + ")");
  return true;
}

// The kernel a request is about: Kokkos' "kokkos.kernel_name" input, else the innermost region.
std::string context_label(const State& s, std::size_t n_inputs,
                          const Kokkos_Tools_VariableValue* inputs) {
  for (std::size_t i = 0; inputs && i < n_inputs; ++i) {
    auto it = s.inputs.find(inputs[i].type_id);
    if (it != s.inputs.end() && it->second == "kokkos.kernel_name")
      return std::string(inputs[i].value.string_value,
                         strnlen(inputs[i].value.string_value, KOKKOS_TOOLS_TUNING_STRING_LENGTH));
  }
  return s.regions.empty() ? std::string() : s.regions.back();
}

void begin_region_of_kind(const char* name, std::uint64_t* kernel_id) {
  try {
    current_label = name ? name : "";
    State& s = state();
    std::lock_guard lock(s.mutex);
    ++s.launches[current_label];
    if (kernel_id) *kernel_id = s.next_kernel_id++;
  } catch (...) {
    ++state().internal_errors;
  }
}

void end_region_of_kind() { current_label.clear(); }

}  // namespace

#pragma GCC visibility push(default)
extern "C" {

const char* r3_kokkos_current_label(void) {
  return current_label.empty() ? nullptr : current_label.c_str();
}

const char* r3_kokkos_choices(const char* label) {
  thread_local std::string text;
  try {
    text.clear();
    if (label == nullptr) return nullptr;
    const std::string prefix = std::string(label) + "_";
    State& s = state();
    std::lock_guard lock(s.mutex);
    std::map<std::string, const std::vector<std::int64_t>*> sets;  // the latest of each name
    for (const auto& [id, v] : s.outputs) {
      if (v.int_set.empty() || v.name.size() <= prefix.size() || v.name.rfind(prefix, 0) != 0)
        continue;
      const std::string name = v.name.substr(prefix.size());
      if (name.find_first_of("=;,") == std::string::npos) sets[name] = &v.int_set;
    }
    for (const auto& [name, values] : sets) {
      text += (text.empty() ? "" : ";") + name + "=";
      for (std::size_t i = 0; i < values->size(); ++i)
        text += (i ? "," : "") + std::to_string((*values)[i]);
    }
  } catch (...) {
    ++state().internal_errors;
    text.clear();
  }
  return text.empty() ? nullptr : text.c_str();
}

void kokkosp_init_library(const int load_sequence, const uint64_t interface_version,
                          const uint32_t device_count, void* device_info) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const char* tuned = std::getenv("R3_KOKKOS_TUNED");
  if (!tuned || !*tuned) {
    if (verbose()) std::fprintf(stderr, "r3 kokkos: connector loaded; labelling launches only\n");
    return;
  }
  s.tuning_wanted = true;
  s.tuned_path = tuned;
  try {
    s.tuned = TunedValues::load(tuned);
    s.tuned_loaded = true;
    std::string kernels;
    for (const auto& k : s.tuned.kernels()) kernels += (kernels.empty() ? "" : ", ") + k.label;
    std::fprintf(stderr, "r3 kokkos: tuned values for %zu kernel(s) (%s) from %s\n",
                 s.tuned.kernels().size(), kernels.c_str(), tuned);
    if (const char* limits = std::getenv("R3_KOKKOS_TEAM_LIMITS"); limits && *limits) {
      try {
        std::ifstream in(limits);
        std::stringstream text;
        text << in.rdbuf();
        if (!in) throw r3::kokkos::TunedValuesError(std::string(limits) + ": cannot be read");
        s.team_limits = r3::kokkos::parse_team_limits(text.str(), limits);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "r3 kokkos: %s; Kokkos' team-size tuner keeps its own choices\n",
                     e.what());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "r3 kokkos: cannot use the tuned values: %s; the application runs with Kokkos' "
                 "defaults\n",
                 e.what());
  } catch (...) {
    ++s.internal_errors;
  }
}

void kokkosp_finalize_library(void) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  std::uint64_t total = 0;
  for (const auto& [label, n] : s.launches) total += n;
  std::fprintf(stderr, "r3 kokkos: %" PRIu64 " parallel region(s) under %zu label(s)", total,
               s.launches.size());
  if (s.tuning_wanted)
    std::fprintf(stderr,
                 "; %" PRIu64 " tuning request(s): %" PRIu64 " value(s) applied, %" PRIu64
                 " refused, %" PRIu64 " left at Kokkos' default",
                 s.requests, s.applied, s.refused, s.unanswered);
  if (s.internal_errors > 0)
    std::fprintf(stderr, "; %" PRIu64 " internal error(s)", s.internal_errors.load());
  std::fprintf(stderr, "\n");
  if (verbose()) {
    for (const auto& [label, n] : s.launches)
      std::fprintf(stderr, "r3 kokkos:   %8" PRIu64 "  %s\n", n, label.c_str());
  }
  if (s.tuning_wanted && s.tuned_loaded && s.outputs.empty()) {
    std::fprintf(stderr,
                 "r3 kokkos: the application declared no tuning variable. Kokkos asks its tools "
                 "only when built with Kokkos_ENABLE_TUNING; for a Kokkos built without it, "
                 "`r3 apply --kokkos-without-tuning` answers the application's own variables\n");
  }
}

void kokkosp_begin_parallel_for(const char* name, const uint32_t, uint64_t* kernel_id) {
  begin_region_of_kind(name, kernel_id);
}
void kokkosp_end_parallel_for(const uint64_t) { end_region_of_kind(); }
void kokkosp_begin_parallel_reduce(const char* name, const uint32_t, uint64_t* kernel_id) {
  begin_region_of_kind(name, kernel_id);
}
void kokkosp_end_parallel_reduce(const uint64_t) { end_region_of_kind(); }
void kokkosp_begin_parallel_scan(const char* name, const uint32_t, uint64_t* kernel_id) {
  begin_region_of_kind(name, kernel_id);
}
void kokkosp_end_parallel_scan(const uint64_t) { end_region_of_kind(); }

void kokkosp_push_profile_region(const char* name) {
  try {
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.regions.emplace_back(name ? name : "");
  } catch (...) {
    ++state().internal_errors;
  }
}

void kokkosp_pop_profile_region(void) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.regions.empty()) s.regions.pop_back();
}

void kokkosp_declare_output_type(const char* name, const size_t id,
                                 Kokkos_Tools_VariableInfo* info) {
  try {
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.outputs[id] = copy_variable(name, info);
  } catch (...) {
    ++state().internal_errors;
  }
}

void kokkosp_declare_input_type(const char* name, const size_t id,
                                Kokkos_Tools_VariableInfo* info) {
  try {
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.inputs[id] = name ? name : "";
  } catch (...) {
    ++state().internal_errors;
  }
}

void kokkosp_request_values(const size_t context, const size_t n_inputs,
                            const Kokkos_Tools_VariableValue* inputs, const size_t n_outputs,
                            Kokkos_Tools_VariableValue* outputs) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  try {
    ++s.requests;
    const std::string label = context_label(s, n_inputs, inputs);
    for (std::size_t i = 0; outputs && i < n_outputs; ++i) {
      auto variable = s.outputs.find(outputs[i].type_id);
      if (variable == s.outputs.end()) {
        ++s.unanswered;
        continue;
      }
      if (answer_team_tuner(s, variable->second, outputs[i])) continue;
      // Kokkos' MDRange tuner's fractions are not answered from a result (a tile there is no
      // fraction: the tuner's lists depend on an occupancy computation r3 does not redo).
      auto found = is_kokkos_tuner_fraction(variable->second)
                       ? std::nullopt
                       : s.tuned.find(variable->second.name, label);
      if (!found) {
        ++s.unanswered;
        // Kokkos' own tuners take their first candidate for a variable no tool answers, a
        // degenerate launch: a 1x1x1 tile, or vector length 1 with the largest team (4x slower
        // on policies.cpp's matvec). Such a variable gets the middle of the candidates instead.
        if (is_kokkos_tuner_fraction(variable->second)) {
          outputs[i].value.double_value = kMiddleFraction;
          report_once(s, std::string(s.tuning_wanted ? "not in the result: " : "no r3 result: ") +
                             variable->second.name +
                             ", a variable of Kokkos' own tuners (--kokkos-tune-internals): "
                             "answered with the middle of its candidates, neither Kokkos' first "
                             "(a 1x1x1 tile, or vector length 1 with the largest team, which it "
                             "would take unanswered) nor the choice Kokkos makes without a tool. "
                             "Tune every kernel Kokkos hands a tool, or run without "
                             "--kokkos-tune-internals");
          if (variable->second.name.find("_tile_size_") != std::string::npos)
            report_once(s, kMDRangeTunerWarning);
        }
        continue;
      }
      Kokkos_Tools_VariableValue candidate = outputs[i];
      std::string why = assign(variable->second, found->value, candidate);
      if (!why.empty()) {
        ++s.refused;
        report_once(s, "not applied: " + variable->second.name + " = " + found->value +
                           " (kernel '" + found->kernel->label + "', " +
                           found->kernel->file.string() + "): " + why +
                           "; Kokkos' default is kept");
        continue;
      }
      outputs[i] = candidate;
      ++s.applied;
      report_once(s, "applied " + variable->second.name + " = " + found->value + " (kernel '" +
                         found->kernel->label + "', " + found->key + " in " +
                         found->kernel->file.string() + ")");
    }
  } catch (...) {
    ++s.internal_errors;
  }
}

void kokkosp_begin_context(const size_t) {}
void kokkosp_end_context(const size_t, Kokkos_Tools_VariableValue) {}

// Kokkos fences the device around every callback of a tool that does not say otherwise; this one
// needs no fence (the label of a launch is read on the launching thread, between begin and end),
// and a fence per kernel would change the application's timing that `r3 apply` compares.
void kokkosp_request_tool_settings(const uint32_t, Kokkos_Tools_ToolSettings* settings) {
  if (settings != nullptr) settings->requires_global_fencing = false;
}

}  // extern "C"
#pragma GCC visibility pop
