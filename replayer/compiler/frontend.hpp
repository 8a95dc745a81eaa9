// Clang front end, private to libr3llvm (this header may name LLVM types).
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <string>

#include "r3/compiler/host_compiler.hpp"

namespace r3::compiler {

// Compiles `source` (C++17) to LLVM IR for `triple`, without running LLVM's optimisation passes.
// Returns null on failure; every diagnostic is appended to `diagnostics`.
std::unique_ptr<llvm::Module> emit_ir(const Source& source, const std::string& triple,
                                      llvm::LLVMContext& context, std::string& diagnostics);

}  // namespace r3::compiler
