#include "r3/replay/extract_command.hpp"

#include <fstream>
#include <ostream>

#include "r3/config.hpp"
#include "r3/error.hpp"

#if R3_HAVE_LLVM
#include "r3/compiler/extract.hpp"
#endif
#if R3_HAVE_CUDA
#include "nvrtc_compiler.hpp"
#endif

namespace r3::replay {

ExtractedSource extract_source(const std::filesystem::path& file, const std::string& kernel,
                               const std::map<std::string, std::string>& defines,
                               const std::vector<std::filesystem::path>& include_dirs,
                               const std::vector<std::string>& flags) {
  ExtractedSource out;
#if R3_HAVE_LLVM
  compiler::ExtractOptions o;
  o.file = file;
  o.kernel = kernel;
  o.defines = defines;
  o.include_dirs = include_dirs;
  o.flags = flags;
  compiler::ExtractedUnit unit = compiler::extract_kernel(o);
  out.ok = unit.ok;
  out.text = std::move(unit.text);
  out.diagnostics = std::move(unit.diagnostics);
  out.pieces = unit.pieces.size();
  out.parameter_struct_types = std::move(unit.parameter_struct_types);
  out.parameter_names = std::move(unit.parameter_names);
#else
  (void)file, (void)kernel, (void)defines, (void)include_dirs, (void)flags;
  out.diagnostics = "extracting a kernel from an application's file needs Clang/LLVM 19, which "
                    "this build of r3 was configured without";
#endif
  return out;
}

int extract_command(const ExtractCommandOptions& options, std::ostream& out, std::ostream& log) {
#if R3_HAVE_LLVM
  if (!std::filesystem::is_regular_file(options.file))
    throw UsageError("r3 extract: " + options.file.string() + " is not a file");
  compiler::ExtractOptions o;
  o.file = options.file;
  o.kernel = options.kernel;
  o.cuda_arch = options.arch;
  if (!options.compile_commands.empty()) {
    compiler::CompileFlags flags =
        compiler::flags_from_compile_commands(options.compile_commands, options.file);
    o.defines = flags.defines;
    o.include_dirs = flags.include_dirs;
    o.flags = flags.flags;
    for (const std::string& note : flags.notes) log << "compile   " << note << "\n";
  }
  for (const auto& dir : options.include_dirs) o.include_dirs.push_back(dir);
  for (const std::string& define : options.defines) {
    const std::size_t eq = define.find('=');
    o.defines[define.substr(0, eq)] = eq == std::string::npos ? "1" : define.substr(eq + 1);
  }
  if (!options.std.empty()) o.flags.push_back("-std=" + options.std);
  compiler::ExtractedUnit unit = compiler::extract_kernel(o);
  if (!unit.ok) {
    log << unit.diagnostics;
    log << "result    no unit: kernel '" << options.kernel << "' could not be extracted from "
        << options.file.string() << "\n";
    return 1;
  }
  log << "kernel    " << unit.kernel << (unit.is_template ? " (a template)" : "") << " from "
      << options.file.string() << "\n";
  log << "unit      " << unit.pieces.size() << " piece(s) of the file and its headers, "
      << unit.macros.size() << " macro(s), " << unit.includes.size() << " toolkit header(s)\n";
  if (options.output.empty()) {
    out << unit.text;
  } else {
    std::ofstream file(options.output, std::ios::binary);
    file << unit.text;
    if (!file) throw IoError("write", "cannot write " + options.output.string());
    log << "wrote     " << options.output.string() << "\n";
  }
  if (!options.check) return 0;
#if R3_HAVE_CUDA
  const int arch = std::stoi(options.arch.substr(options.arch.find('_') + 1));
  // A template is compiled for the instance asked for ("scale<4>"); without one, as it is.
  std::string entry = unit.kernel;
  if (unit.is_template) {
    const std::size_t angle = options.kernel.find('<');
    entry = angle == std::string::npos ? "" : unit.kernel + options.kernel.substr(angle);
  }
  cuda::NvrtcOutput compiled =
      cuda::compile_nvrtc(options.file.filename().string(), unit.text, entry, o.defines,
                          o.include_dirs, cuda::split_flags(o.flags), arch);
  if (!compiled.ok) {
    log << compiled.log << "check     the unit does not compile with NVRTC\n";
    return 1;
  }
  log << "check     NVRTC compiles the unit for " << options.arch << " (" << compiled.seconds
      << " s)\n";
  return 0;
#else
  log << "check     not done: this build of r3 has no CUDA (NVRTC)\n";
  return 1;
#endif
#else
  (void)options, (void)out, (void)log;
  throw NotAvailableError("r3 extract needs Clang/LLVM 19, which this build of r3 was configured "
                          "without");
#endif
}

}  // namespace r3::replay
