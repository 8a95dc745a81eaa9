#include "r3/compiler/cuda_compiler.hpp"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Demangle/Demangle.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <chrono>
#include <mutex>
#include <optional>

#include "frontend.hpp"
#include "r3/elapsed.hpp"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace r3::compiler {
namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

void initialise_nvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

std::unique_ptr<llvm::TargetMachine> target_machine(std::string_view arch, std::string& error) {
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (target == nullptr) return nullptr;
  llvm::TargetOptions options;
  return std::unique_ptr<llvm::TargetMachine>(
      target->createTargetMachine(kTriple, std::string(arch), "", options, std::nullopt,
                                  std::nullopt,
#if LLVM_VERSION_MAJOR >= 18
                                  llvm::CodeGenOptLevel::Aggressive));
#else
                                  llvm::CodeGenOpt::Aggressive));
#endif
}

bool is_kernel(const llvm::Function& function) {
  if (function.getCallingConv() == llvm::CallingConv::PTX_Kernel) return true;
  const llvm::Module& module = *function.getParent();
  if (const llvm::NamedMDNode* annotations = module.getNamedMetadata("nvvm.annotations")) {
    for (const llvm::MDNode* node : annotations->operands()) {
      if (node->getNumOperands() < 2) continue;
      auto* value = llvm::dyn_cast_or_null<llvm::ValueAsMetadata>(node->getOperand(0).get());
      auto* kind = llvm::dyn_cast_or_null<llvm::MDString>(node->getOperand(1).get());
      if (value && kind && value->getValue() == &function && kind->getString() == "kernel")
        return true;
    }
  }
  return false;
}

// The kernel `entry` names: by symbol, else by the demangled name before its parameter list.
const llvm::Function* find_kernel(const llvm::Module& module, std::string_view entry,
                                  std::string& candidates) {
  const llvm::Function* found = nullptr;
  for (const llvm::Function& function : module) {
    if (function.isDeclaration() || !is_kernel(function)) continue;
    const std::string symbol = function.getName().str();
    std::string demangled = llvm::demangle(symbol);
    candidates += (candidates.empty() ? "" : ", ") + demangled;
    if (symbol == entry) return &function;
    std::string_view base(demangled);
    base = base.substr(0, base.find('('));
    if (base == entry) found = &function;
  }
  return found;
}

// libdevice's math functions, linked in where the kernel calls them; the rest is dropped.
std::string link_libdevice(llvm::Module& module) {
  std::filesystem::path toolkit = cuda_toolkit();
  if (toolkit.empty()) return "no CUDA toolkit found for libdevice (set CUDA_PATH)";
  std::filesystem::path path = toolkit / "nvvm" / "libdevice" / "libdevice.10.bc";
  auto buffer = llvm::MemoryBuffer::getFile(path.string());
  if (!buffer) return "cannot read " + path.string() + ": " + buffer.getError().message();
  auto library = llvm::parseBitcodeFile(**buffer, module.getContext());
  if (!library) return "cannot parse " + path.string() + ": " + llvm::toString(library.takeError());
  (*library)->setTargetTriple(module.getTargetTriple());
  (*library)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*library), llvm::Linker::LinkOnlyNeeded))
    return "linking libdevice failed";
  // Private to this module, so that what the pipeline inlines is dropped from the PTX.
  for (llvm::Function& function : module) {
    if (!function.isDeclaration() && function.getName().starts_with("__nv_"))
      function.setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  return "";
}

}  // namespace

CudaCompileResult compile_cuda_kernel(const Source& source, std::string_view entry,
                                      std::string_view passes, std::string_view arch) {
  initialise_nvptx();
  CudaCompileResult result;
  auto context = std::make_unique<llvm::LLVMContext>();
  auto start = Clock::now();
  clang::EmitLLVMOnlyAction action(context.get());
  std::unique_ptr<llvm::Module> module;
  if (run_frontend(source, Dialect::cuda, action, result.diagnostics, std::string(arch)))
    module = action.takeModule();
  result.frontend_seconds = seconds_since(start);
  if (!module) {
    result.failed_at = Stage::frontend;
    return result;
  }
  std::string candidates;
  const llvm::Function* kernel = find_kernel(*module, entry, candidates);
  if (kernel == nullptr) {
    result.failed_at = Stage::frontend;
    result.diagnostics += "r3: " + source.name + " defines no kernel '" + std::string(entry) +
                          "' (kernels: " + (candidates.empty() ? "none" : candidates) + ")\n";
    return result;
  }
  result.function_name = kernel->getName().str();

  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine = target_machine(arch, error);
  if (!machine) {
    result.failed_at = Stage::codegen;
    result.diagnostics += "r3: no NVPTX target for " + std::string(arch) + ": " + error + "\n";
    return result;
  }
  module->setDataLayout(machine->createDataLayout());
  start = Clock::now();
  if (std::string why = link_libdevice(*module); !why.empty()) {
    result.failed_at = Stage::passes;
    result.diagnostics += "r3: " + why + "\n";
    return result;
  }
  std::string pass_error =
      run_pass_pipeline(*module, machine.get(), passes.empty() ? "default<O3>" : passes);
  result.passes_seconds = seconds_since(start);
  if (!pass_error.empty()) {
    result.failed_at = Stage::passes;
    result.diagnostics += pass_error + "\n";
    return result;
  }

  start = Clock::now();
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream out(ptx);
  llvm::legacy::PassManager codegen;
#if LLVM_VERSION_MAJOR >= 18
  constexpr auto kAssembly = llvm::CodeGenFileType::AssemblyFile;
#else
  constexpr auto kAssembly = llvm::CGFT_AssemblyFile;
#endif
  if (machine->addPassesToEmitFile(codegen, out, nullptr, kAssembly)) {
    result.failed_at = Stage::codegen;
    result.diagnostics += "r3: the NVPTX back end cannot emit PTX for " + std::string(arch) + "\n";
    return result;
  }
  codegen.run(*module);
  result.codegen_seconds = seconds_since(start);
  result.ptx = ptx.str().str();
  return result;
}

}  // namespace r3::compiler
