#include "apply_manifest.hpp"

#include <charconv>
#include <cmath>
#include <sstream>

#include "r3/error.hpp"
#include "r3/files.hpp"

namespace r3::record::cuda {

std::string to_text(const ApplyManifest& manifest) {
  std::ostringstream out;
  out.precision(17);
  out << kManifestFormat << ' ' << kManifestVersion << '\n';
  out << "architecture " << manifest.architecture << '\n';
  for (const AppliedKernel& k : manifest.kernels) {
    out << "kernel " << k.kernel << '\n';
    out << "  code " << k.code.string() << '\n';
    out << "  function " << k.function << '\n';
    if (k.block) out << "  block " << k.block->x << ' ' << k.block->y << ' ' << k.block->z << '\n';
    out << "  grid " << (k.keep_grid ? "application" : "derived") << '\n';
    if (k.speedup > 0) out << "  speedup " << k.speedup << '\n';
    for (const TypeTolerance& t : k.tolerances)
      out << "  tolerance " << capture::to_string(t.type) << ' ' << t.rtol << ' ' << t.atol << '\n';
    for (const std::string& g : k.globals) out << "  global " << g << '\n';
    out << "end\n";
  }
  return out.str();
}

namespace {

// One line: its key and the rest, trimmed (names and paths hold no newline; a path may hold
// spaces, so the value is the whole rest of the line).
struct Line {
  std::string key, value;
};

Line split(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  text.remove_prefix(first);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  const auto space = text.find_first_of(" \t");
  if (space == std::string_view::npos) return {std::string(text), ""};
  std::string_view value = text.substr(space);
  value.remove_prefix(value.find_first_not_of(" \t"));
  return {std::string(text.substr(0, space)), std::string(value)};
}

std::uint32_t dimension(std::string_view text, const std::string& where) {
  std::uint32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value == 0)
    throw FormatError(where + ": '" + std::string(text) + "' is not a positive block dimension");
  return value;
}

}  // namespace

ApplyManifest parse_manifest(std::string_view text, const std::string& file) {
  ApplyManifest manifest;
  AppliedKernel* open = nullptr;
  int number = 0;
  bool header = false;
  std::istringstream lines{std::string(text)};
  for (std::string raw; std::getline(lines, raw);) {
    ++number;
    const std::string where = file + ":" + std::to_string(number);
    const Line line = split(raw);
    if (line.key.empty() || line.key[0] == '#') continue;
    if (!header) {
      if (line.key != kManifestFormat)
        throw FormatError(where + ": not an r3 apply manifest (it starts with '" +
                          std::string(kManifestFormat) + " " + std::to_string(kManifestVersion) +
                          "')");
      if (line.value != std::to_string(kManifestVersion))
        throw FormatError(where + ": manifest version '" + line.value + "'; this r3 reads " +
                          std::to_string(kManifestVersion));
      header = true;
      continue;
    }
    auto need_value = [&] {
      if (line.value.empty()) throw FormatError(where + ": '" + line.key + "' without a value");
    };
    if (line.key == "architecture") {
      need_value();
      manifest.architecture = line.value;
    } else if (line.key == "kernel") {
      need_value();
      if (open) throw FormatError(where + ": 'kernel' before the 'end' of kernel " + open->kernel);
      manifest.kernels.push_back({});
      open = &manifest.kernels.back();
      open->kernel = line.value;
    } else if (line.key == "end") {
      if (!open) throw FormatError(where + ": 'end' outside a kernel");
      if (open->code.empty() || open->function.empty())
        throw FormatError(where + ": kernel " + open->kernel + " has no 'code' or 'function'");
      open = nullptr;
    } else if (!open) {
      throw FormatError(where + ": unknown key '" + line.key + "' (expected architecture, kernel)");
    } else if (line.key == "code") {
      need_value();
      open->code = line.value;
    } else if (line.key == "function") {
      need_value();
      open->function = line.value;
    } else if (line.key == "block") {
      std::istringstream dims(line.value);
      std::string x, y, z, extra;
      dims >> x >> y >> z >> extra;
      if (z.empty() || !extra.empty())
        throw FormatError(where + ": 'block' takes three dimensions, got '" + line.value + "'");
      open->block = capture::Dim3{dimension(x, where), dimension(y, where), dimension(z, where)};
    } else if (line.key == "grid") {
      if (line.value != "derived" && line.value != "application")
        throw FormatError(where + ": 'grid' is 'derived' or 'application', not '" + line.value +
                          "'");
      open->keep_grid = line.value == "application";
    } else if (line.key == "speedup") {
      double value = 0;
      const auto [end, ec] =
          std::from_chars(line.value.data(), line.value.data() + line.value.size(), value);
      if (ec != std::errc() || end != line.value.data() + line.value.size() || !(value >= 0) ||
          !std::isfinite(value))
        throw FormatError(where + ": 'speedup' is a factor, not '" + line.value + "'");
      open->speedup = value;
    } else if (line.key == "global") {
      need_value();
      open->globals.push_back(line.value);
    } else if (line.key == "tolerance") {
      std::istringstream fields(line.value);
      std::string type, extra;
      TypeTolerance t;
      fields >> type >> t.rtol >> t.atol;
      const auto parsed = capture::parse_element_type(type);
      if (fields.fail() || !(fields >> extra).fail() || !parsed || !(t.rtol >= 0) || !(t.atol >= 0))
        throw FormatError(where + ": 'tolerance' is an element type, rtol and atol, not '" +
                          line.value + "'");
      t.type = *parsed;
      open->tolerances.push_back(t);
    } else {
      throw FormatError(where + ": unknown key '" + line.key +
                        "' in a kernel (expected code, function, block, grid, speedup, tolerance, "
                        "global, end)");
    }
  }
  if (!header) throw FormatError(file + ": empty: not an r3 apply manifest");
  if (open) throw FormatError(file + ": kernel " + open->kernel + " has no 'end'");
  if (manifest.architecture.empty()) throw FormatError(file + ": no 'architecture'");
  return manifest;
}

ApplyManifest read_manifest(const std::filesystem::path& file) {
  ApplyManifest manifest = parse_manifest(read_text_file(file, "apply manifest"), file.string());
  for (AppliedKernel& k : manifest.kernels)
    if (k.code.is_relative()) k.code = file.parent_path() / k.code;
  return manifest;
}

LaunchDims winner_launch(const AppliedKernel& kernel, const LaunchDims& asked) {
  if (!kernel.block) return asked;
  if (kernel.keep_grid) return {asked.grid, *kernel.block};
  return {capture::covering_grid(asked.grid, asked.block, *kernel.block), *kernel.block};
}

}  // namespace r3::record::cuda
