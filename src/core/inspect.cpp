#include "r3/inspect.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace r3 {
namespace {

using capture::Launch;
using capture::Region;

std::string dim3(const capture::Dim3& d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

std::string hex_address(std::uint64_t address) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(address));
  return text;
}

std::uint64_t total_size(const std::vector<Region>& regions) {
  std::uint64_t total = 0;
  for (const Region& region : regions) total += region.size;
  return total;
}

std::string count(std::size_t n, const char* singular, const char* plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

void print_device(const capture::DeviceInfo& d, std::ostream& out) {
  out << "device    " << d.backend << ": " << (d.name.empty() ? "(unnamed)" : d.name);
  if (!d.architecture.empty()) out << ", " << d.architecture;
  if (d.compute_capability_major > 0) {
    out << " (compute capability " << d.compute_capability_major << "."
        << d.compute_capability_minor << ")";
  }
  out << "\n";
  out << "          ";
  if (d.multiprocessor_count > 0) {
    out << d.multiprocessor_count << (d.backend == "cuda" ? " SMs, " : " cores, ");
  }
  out << format_bytes(d.memory_bytes) << " memory";
  if (d.l2_cache_bytes > 0) out << ", " << format_bytes(d.l2_cache_bytes) << " L2";
  if (d.memory_bandwidth_gbs > 0) out << ", " << d.memory_bandwidth_gbs << " GB/s";
  out << "\n";
  if (!d.driver_version.empty() || !d.toolkit_version.empty()) {
    out << "          driver " << (d.driver_version.empty() ? "?" : d.driver_version)
        << ", toolkit " << (d.toolkit_version.empty() ? "?" : d.toolkit_version) << "\n";
  }
}

void print_regions(const char* title, const std::vector<Region>& regions, bool list,
                   const std::vector<std::string>& parameter_names, std::ostream& out) {
  if (regions.empty()) return;
  out << "      " << title << " " << count(regions.size(), "region", "regions") << ", "
      << format_bytes(total_size(regions)) << "\n";
  if (!list) return;
  for (const Region& r : regions) {
    const std::string named = capture::source_region_name(parameter_names, r.name);
    out << "        " << (r.name.empty() ? "(unnamed)" : named)
        << (named == r.name ? "" : " (" + r.name + ")") << "  " << hex_address(r.address)
        << "  " << format_bytes(r.size) << "  " << capture::to_string(r.element_type);
    if (r.kind == capture::RegionKind::global) out << "  global";
    out << "  " << r.content.hex().substr(0, 12) << "\n";
  }
}

// The parameter buffer as launched, 16 bytes a line with their offset: what a closure (a Kokkos
// functor and policy) holds.
void print_args(const std::vector<std::byte>& args, std::ostream& out) {
  for (std::size_t at = 0; at < args.size(); at += 16) {
    char line[96];
    int n = std::snprintf(line, sizeof line, "      %5zu ", at);
    for (std::size_t i = at; i < std::min(args.size(), at + 16); ++i)
      n += std::snprintf(line + n, sizeof line - static_cast<std::size_t>(n), "%s%02x",
                         (i - at) % 4 == 0 ? " " : "", static_cast<unsigned>(args[i]));
    out << line << "\n";
  }
}

void print_launch(std::size_t index, const Launch& launch, const InspectOptions& options,
                  const std::vector<std::string>& parameter_names, std::ostream& out) {
  const bool list = options.list_regions;
  out << "    launch " << index << "  #" << launch.sequence << "  grid " << dim3(launch.grid)
      << "  block " << dim3(launch.block);
  if (launch.shared_memory_bytes > 0)
    out << "  shared " << format_bytes(launch.shared_memory_bytes);
  out << "  args " << format_bytes(launch.args.size());
  if (launch.app_time_us) {
    char time[48];
    std::snprintf(time, sizeof time, "  %.1f us in the application", *launch.app_time_us);
    out << time;
  }
  out << "\n";
  if (options.show_args) print_args(launch.args, out);
  print_regions("prologue", launch.prologue, list, parameter_names, out);
  print_regions("globals ", launch.globals, list, parameter_names, out);
  print_regions("epilogue", launch.epilogue, list, parameter_names, out);
}

void print_kernel(std::size_t id, const capture::Kernel& kernel,
                  const capture::CaptureReader& capture, const InspectOptions& options,
                  std::ostream& out) {
  out << "\nkernel #" << id << "  " << kernel.name << "\n";
  static const std::vector<std::string> kNoNames;
  auto found = options.parameter_names.find(kernel.name);
  const std::vector<std::string>& names =
      found == options.parameter_names.end() ? kNoNames : found->second;
  if (!kernel.demangled_name.empty() && kernel.demangled_name != kernel.name) {
    out << "  demangled  " << kernel.demangled_name << "\n";
  }
  if (!kernel.kokkos_label.empty()) out << "  label      " << kernel.kokkos_label << "\n";
  for (const auto& [choice, values] : kernel.kokkos_choices) {
    out << "  declares   " << choice << ":";
    for (std::int64_t v : values) out << " " << v;
    out << "\n";
  }
  if (!kernel.images.empty()) {
    out << "  images    ";
    for (const auto& [kind, content] : kernel.images) {
      out << " " << kind << " (" << format_bytes(capture.content_size(content)) << ")";
    }
    out << "\n";
  }
  out << "  params     " << kernel.params.size();
  for (const capture::Param& p : kernel.params) {
    out << "  [+" << p.offset << " " << p.size << " B";
    if (!p.type.empty()) out << " " << p.type;
    if (p.is_pointer) out << " ptr";
    out << "]";
  }
  out << "\n  launches   " << kernel.launches.size() << "\n";
  std::size_t shown = std::min(kernel.launches.size(), options.launches_shown);
  for (std::size_t i = 0; i < shown; ++i) print_launch(i, kernel.launches[i], options, names, out);
  if (shown < kernel.launches.size()) {
    out << "    ... " << kernel.launches.size() - shown << " more launches\n";
  }
}

}  // namespace

std::string format_bytes(std::uint64_t bytes) {
  static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, value < 10 ? "%.2f %s" : "%.1f %s", value, units[unit]);
  return text;
}

void inspect_capture(const capture::CaptureReader& capture, const InspectOptions& options,
                     std::ostream& out) {
  const capture::CaptureInfo& info = capture.info();
  capture::CaptureStats stats = capture.stats();
  out << "capture   " << capture.path().string() << "\n";
  out << "format    " << capture::kFormatName << " version " << capture.version()
      << ", written by r3 " << info.r3_version << " on " << info.host << " at " << info.created
      << "\n";
  if (!capture.complete()) {
    out << "warning   the writer did not close this file (the application ended early?); "
           "the launches below were flushed and are usable\n";
  }
  for (const std::string& warning : capture.warnings()) out << "warning   " << warning << "\n";
  if (!info.command_line.empty()) out << "command   " << info.command_line << "\n";
  if (info.rank >= 0) out << "rank      " << info.rank << "\n";
  print_device(info.device, out);
  out << "contents  " << count(stats.kernels, "kernel", "kernels") << ", "
      << count(stats.launches, "launch", "launches") << ", "
      << count(stats.regions, "region", "regions") << "\n";
  out << "bytes     " << format_bytes(stats.referenced_bytes) << " referenced, "
      << format_bytes(stats.unique_bytes) << " distinct, " << format_bytes(stats.stored_bytes)
      << " stored; file " << format_bytes(stats.file_bytes) << "\n";
  for (std::size_t i = 0; i < capture.kernels().size(); ++i) {
    print_kernel(i, capture.kernels()[i], capture, options, out);
  }
}

}  // namespace r3
