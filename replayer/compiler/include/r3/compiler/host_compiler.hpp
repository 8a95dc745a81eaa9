// The host compile pipeline: C++ source -> Clang (in process) -> LLVM IR -> a pass pipeline in
// LLVM's textual syntax -> ORC LLJIT on this CPU. Lives in libr3llvm, which links LLVM and Clang
// statically; nothing here exposes an LLVM type.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace r3::compiler {

struct Source {
  std::string name = "kernel.cpp";  // the file name diagnostics refer to
  std::string text;
  std::map<std::string, std::string> defines;       // -D NAME=VALUE
  std::vector<std::filesystem::path> include_dirs;  // -I
  std::vector<std::string> flags;                   // further clang flags (e.g. -ffast-math)
};

enum class Stage { none, frontend, passes, codegen };

// A compiled kernel: its entry stays callable while this object lives.
class HostKernel;

// Calls the kernel with each parameter copied from args + offsets[i] (i in declaration order).
using HostEntry = void (*)(const unsigned char* args, const std::uint64_t* offsets);

struct HostCompileResult {
  std::shared_ptr<const HostKernel> kernel;  // null when compilation failed
  Stage failed_at = Stage::none;
  // Compiler messages (warnings too) as "name:line:column: error: ...", ready to show a user or
  // an LLM; for a bad pass pipeline, LLVM's parse error.
  std::string diagnostics;
  double frontend_seconds = 0;
  double passes_seconds = 0;
  double codegen_seconds = 0;
  std::uint64_t code_bytes = 0;  // size of the object file the JIT loaded
  bool ok() const { return kernel != nullptr; }
};

// Compiles `source` as C++17 for this CPU, runs `passes` (e.g. "default<O3>",
// "function(instcombine,loop-unroll)"; empty: "default<O2>") and JIT-links it. `entry` names the
// kernel function in the source (qualified names and template ids work). Thread-safe.
HostCompileResult compile_host_kernel(const Source& source, std::string_view entry,
                                      std::string_view passes);

HostEntry entry_of(const HostKernel& kernel);

// "" when `passes` is a valid pipeline, else LLVM's message.
std::string check_pass_pipeline(std::string_view passes);

std::string_view llvm_version();
// What compile_host_kernel generates code for: "<triple> <cpu>", e.g.
// "x86_64-pc-linux-gnu skylake-avx512". Part of every compiled variant's cache key.
const std::string& host_target();
// Where Clang's own headers (stddef.h, ...) are: $R3_CLANG_RESOURCE_DIR, else the directory
// of the Clang that r3 was built with.
std::filesystem::path clang_resource_dir();

}  // namespace r3::compiler
