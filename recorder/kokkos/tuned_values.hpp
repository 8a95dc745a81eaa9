// The tuned values of an r3 result, as the Kokkos Tools connector (libr3kokkos.so) hands them to
// a Kokkos application's tuning variables. No Kokkos, HDF5 or r3::core dependency: this code is
// loaded into the user's application.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace r3::kokkos {

// A result file that cannot be used; the message names the file and the key.
struct TunedValuesError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One kernel's values, by variable name: its `defines` (source parameters), and what its `block`
// means to Kokkos' own tuners: vector_length = x, team_size = y (TeamPolicy on GPUs) and
// tile_size_0..2 = x, y, z (MDRangePolicy). An explicit define wins over a value from the block.
struct KernelValues {
  std::string label;                          // the kernel's name in the result (a Kokkos label)
  std::map<std::string, std::string> values;  // variable name -> value as written
  std::filesystem::path file;                 // the best.yaml it came from
};

struct Found {
  const KernelValues* kernel = nullptr;
  std::string key;    // the name in kernel->values that matched
  std::string value;  // the value as written in the result
};

class TunedValues {
 public:
  // A run's best.yaml, or a results directory (every <kernel>/best.yaml in it, and best.yaml).
  static TunedValues load(const std::filesystem::path& path);
  // The same from YAML text (file: the name used in messages).
  static TunedValues parse(std::string_view yaml, const std::filesystem::path& file);

  // The value for a Kokkos tuning variable. Kokkos' tuners name variables after the kernel
  // ("<label>_team_size", "<label>_tile_size_0"); an application's own variable is matched by
  // name within the kernel the request's context names (context_label: the "kokkos.kernel_name"
  // input or the innermost profile region), or within the only kernel that has it.
  std::optional<Found> find(std::string_view variable, std::string_view context_label) const;

  const std::vector<KernelValues>& kernels() const { return kernels_; }
  std::vector<std::filesystem::path> files() const;

 private:
  void add(KernelValues kernel);
  std::vector<KernelValues> kernels_;
};

// A value as a Kokkos variable type wants it; nullopt when the text is not one.
std::optional<std::int64_t> as_integer(std::string_view text);
std::optional<double> as_number(std::string_view text);

}  // namespace r3::kokkos
