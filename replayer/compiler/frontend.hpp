// Clang front end, private to libr3llvm (this header may name LLVM and Clang types).
#pragma once

#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Frontend/FrontendAction.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "r3/compiler/host_compiler.hpp"

namespace r3::compiler {

enum class Dialect {
  cpp,   // C++17 for this CPU
  cuda,  // CUDA device code (for parsing: the CUDA headers when a toolkit is found, else a
         // small prelude declaring what kernels commonly use)
};

// Runs `action` on `source` (in memory). Every diagnostic is appended to `diagnostics`.
// Returns false when the action reports errors. CUDA is compiled for `cuda_arch`.
bool run_frontend(const Source& source, Dialect dialect, clang::FrontendAction& action,
                  std::string& diagnostics, const std::string& cuda_arch = "sm_90");

// Runs `passes` (LLVM's textual pipeline syntax) over `module` with the analyses and passes of
// `machine` (may be null) and checks the IR it leaves; returns LLVM's message for a pipeline it
// cannot parse or for invalid IR, else "".
std::string run_pass_pipeline(llvm::Module& module, llvm::TargetMachine* machine,
                              std::string_view passes);

// The CUDA toolkit: $CUDA_PATH, $CUDA_HOME, else /usr/local/cuda when it has the headers;
// empty when none is found.
std::filesystem::path cuda_toolkit();

// Compiles `source` (C++17) to LLVM IR for this CPU, without running LLVM's optimisation
// passes. Returns null on failure.
std::unique_ptr<llvm::Module> emit_ir(const Source& source, llvm::LLVMContext& context,
                                      std::string& diagnostics);

}  // namespace r3::compiler
