// `r3 extract`: the self-contained, device-only unit of one kernel, cut from an application's
// own source file (host code, main(), <<<>>> launches, system headers and all) with Clang's AST:
// the kernel, the __device__ functions, types, templates, constants, __constant__/__device__
// variables and macros it uses, in the order the file has them, and the CUDA toolkit headers it
// needs. NVRTC and Clang/NVPTX compile the unit where they cannot compile the file. Lives in
// libr3llvm; nothing here exposes an LLVM type.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "r3/compiler/host_compiler.hpp"

namespace r3::compiler {

struct ExtractOptions {
  std::filesystem::path file;  // the application's source file
  // The kernel: its name ("gemm_kernel", "ns::scale"), a template instance ("MatrixMul<32>")
  // or the name of the template.
  std::string kernel;
  std::map<std::string, std::string> defines;       // -D, as the application was built
  std::vector<std::filesystem::path> include_dirs;  // -I, -isystem
  std::vector<std::string> flags;                   // further flags (-std=c++17, ...)
  std::string cuda_arch = "sm_90";
};

// One piece of the unit: a stretch of a file copied as it is.
struct ExtractedPiece {
  std::filesystem::path file;
  std::size_t begin = 0, end = 0;  // byte offsets in that file
  unsigned first_line = 0;         // 1-based
};

struct ExtractedUnit {
  bool ok = false;
  std::string text;         // the unit
  std::string diagnostics;  // Clang's messages, or why nothing was extracted
  std::string kernel;       // the kernel as the unit names it (qualified; a template's name)
  bool is_template = false;
  std::vector<ExtractedPiece> pieces;    // in the order of the unit
  std::vector<std::string> includes;     // toolkit headers the unit includes
  std::vector<std::string> macros;       // macros it defines (from the file and its headers)
  // Per kernel parameter: for a pointer to a struct made of one floating type only (members,
  // bases, arrays), that type ("f32", "f64", "f16"); "" for every other parameter. The recorder
  // knows a struct's name but not its layout, so without this such data is compared bitwise.
  std::vector<std::string> parameter_struct_types;
  std::vector<std::string> parameter_names;  // the kernel's parameters ("" for an unnamed one)
};

ExtractedUnit extract_kernel(const ExtractOptions& options);

// Compile flags of `file` from a compile_commands.json (nvcc or clang command lines): -I,
// -isystem, -D and -std are kept; -arch/--gpu-architecture, -rdc, -Xcompiler and the rest are
// left out, each named in `notes`. Throws r3::Error when the database has no entry for the file.
struct CompileFlags {
  std::map<std::string, std::string> defines;
  std::vector<std::filesystem::path> include_dirs;
  std::vector<std::string> flags;
  std::vector<std::string> notes;
};
CompileFlags flags_from_compile_commands(const std::filesystem::path& database,
                                         const std::filesystem::path& file);

}  // namespace r3::compiler
