#include "r3/apply_command.hpp"

#include <ostream>

#include "../kokkos/tuned_values.hpp"
#include "r3/application.hpp"
#include "r3/error.hpp"

namespace r3::record {

int apply_to_application(const ApplyOptions& options, std::ostream& report) {
  if (options.command.empty()) throw UsageError("r3 apply: give the application to run after --");
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(options.result, ec))
    throw ConfigError("r3 apply: " + options.result.string() +
                      ": no such file or directory (give a run's best.yaml or results directory)");
  const fs::path result = fs::absolute(options.result);
  // Refuse a result the connector could not use before the application starts, not after.
  kokkos::TunedValues tuned;
  try {
    tuned = kokkos::TunedValues::load(result);
  } catch (const kokkos::TunedValuesError& e) {
    throw ConfigError(std::string("r3 apply: ") + e.what());
  }
  report << "r3 apply: tuned values of " << tuned.kernels().size() << " kernel(s) from "
         << result.string() << ":\n";
  for (const auto& k : tuned.kernels()) {
    report << "  " << k.label << ":";
    for (const auto& [name, value] : k.values) report << " " << name << "=" << value;
    if (k.values.empty()) report << " (no launch or source parameters: nothing to apply)";
    report << "\n";
  }

  ApplicationEnvironment env;
  const fs::path connector = find_kokkos_library(kConnectorFile);
  env.set = kokkos_tool_variables(connector);
  env.set.push_back("R3_KOKKOS_TUNED=" + result.string());
  if (options.kokkos_without_tuning)
    env.prepended_paths.push_back("LD_PRELOAD=" + find_kokkos_library(kCompatFile).string());
  report.flush();
  const int status = run_application("r3 apply", options.command, env);
  if (status != 0) report << "r3 apply: the application exited with status " << status << "\n";
  return status;
}

}  // namespace r3::record
