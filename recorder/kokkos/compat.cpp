// libr3kokkos_compat.so: for a Kokkos built without Kokkos_ENABLE_TUNING (Debian's, for one).
// There Kokkos' tuning functions do nothing, so an application's requests never reach a tool.
// Preloaded (LD_PRELOAD; `r3 apply --kokkos-without-tuning`), this library defines those
// functions itself and passes the application's variables and requests to the connector, as a
// Kokkos with tuning would. Kokkos' own tuners (team size, tile size) are compiled out of such
// a Kokkos, so only the application's own variables are answered.
//
// Do not preload it into an application whose Kokkos has tuning: there the connector is reached
// through Kokkos itself.
#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "connector.h"

namespace {

std::mutex inputs_mutex;
// Input values an application set for a context, handed to the tool with its requests.
std::map<std::size_t, std::vector<Kokkos_Tools_VariableValue>>& context_inputs() {
  static auto* inputs = new std::map<std::size_t, std::vector<Kokkos_Tools_VariableValue>>;
  return *inputs;
}

// Ids far from the ones Kokkos' own get_new_variable_id() hands out, so the two never meet.
std::atomic<std::size_t> next_variable_id{std::size_t(1) << 40};

}  // namespace

namespace Kokkos::Tools::Experimental {

std::size_t declare_output_type(const std::string& name, Kokkos_Tools_VariableInfo info) {
  const std::size_t id = next_variable_id++;
  kokkosp_declare_output_type(name.c_str(), id, &info);
  return id;
}

std::size_t declare_input_type(const std::string& name, Kokkos_Tools_VariableInfo info) {
  const std::size_t id = next_variable_id++;
  kokkosp_declare_input_type(name.c_str(), id, &info);
  return id;
}

void set_input_values(std::size_t context, std::size_t count, Kokkos_Tools_VariableValue* values) {
  if (!values) return;
  std::lock_guard lock(inputs_mutex);
  auto& inputs = context_inputs()[context];
  inputs.insert(inputs.end(), values, values + count);
}

void request_output_values(std::size_t context, std::size_t count,
                           Kokkos_Tools_VariableValue* values) {
  std::vector<Kokkos_Tools_VariableValue> inputs;
  {
    std::lock_guard lock(inputs_mutex);
    if (auto it = context_inputs().find(context); it != context_inputs().end()) inputs = it->second;
  }
  kokkosp_request_values(context, inputs.size(), inputs.data(), count, values);
}

void begin_context(std::size_t context) { kokkosp_begin_context(context); }

void end_context(std::size_t context) {
  {
    std::lock_guard lock(inputs_mutex);
    context_inputs().erase(context);
  }
  kokkosp_end_context(context, Kokkos_Tools_VariableValue{});
}

bool have_tuning_tool() { return true; }

}  // namespace Kokkos::Tools::Experimental
