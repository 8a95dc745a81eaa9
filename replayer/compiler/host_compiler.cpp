#include "r3/compiler/host_compiler.hpp"

#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectTransformLayer.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <chrono>
#include <mutex>
#include <regex>

#include "frontend.hpp"
#include "r3/elapsed.hpp"

namespace r3::compiler {

class HostKernel {
 public:
  HostKernel(std::unique_ptr<llvm::orc::LLJIT> jit, HostEntry entry)
      : jit_(std::move(jit)), entry_(entry) {}
  HostEntry entry() const { return entry_; }

 private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;  // owns the code `entry_` points into
  HostEntry entry_;
};

namespace {

constexpr const char* kEntrySymbol = "__r3_entry";
constexpr const char* kThunkFile = "<r3 entry thunk>";

void initialise_native_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

// Appended to the user's source: an extern "C" function with one fixed signature that calls
// the kernel with parameters copied from the recorded argument bytes. The parameter types come
// from the kernel's own declaration, so nothing about its signature needs to be known here.
// The kernel's source may define any macro (`#define N 512`, `R`, `A`, `I`, `min`): the thunk's
// own names are reserved ones (__r3_...), which a program may not define, and the keywords it
// uses are shielded with push_macro/undef/pop_macro (C code does `#define inline`).
std::string entry_thunk(std::string_view entry) {
  static const char* const kKeywords[] = {"namespace", "template", "unsigned", "long",
                                          "struct",    "using",    "class",    "inline",
                                          "void",      "const",    "char",     "sizeof",
                                          "typename",  "extern",   "reinterpret_cast"};
  std::string text = "\n#line 1 \"";
  text += kThunkFile;
  text += "\"\n";
  for (const char* keyword : kKeywords)
    text += std::string("#pragma push_macro(\"") + keyword + "\")\n#undef " + keyword + "\n";
  text += R"(namespace __r3_detail {
template <unsigned long... __r3_i> struct __r3_index_list {};
template <unsigned long __r3_n, unsigned long... __r3_i>
struct __r3_make_index_list : __r3_make_index_list<__r3_n - 1, __r3_n - 1, __r3_i...> {};
template <unsigned long... __r3_i> struct __r3_make_index_list<0, __r3_i...> {
  using __r3_type = __r3_index_list<__r3_i...>;
};
template <class __r3_r, class... __r3_a, unsigned long... __r3_i>
inline void __r3_invoke(__r3_r (*__r3_kernel)(__r3_a...), const unsigned char* __r3_args,
                        const unsigned long* __r3_offsets, __r3_index_list<__r3_i...>) {
  __r3_kernel(*reinterpret_cast<const __r3_a*>(__r3_args + __r3_offsets[__r3_i])...);
}
template <class __r3_r, class... __r3_a>
inline void __r3_invoke(__r3_r (*__r3_kernel)(__r3_a...), const unsigned char* __r3_args,
                        const unsigned long* __r3_offsets) {
  __r3_invoke(__r3_kernel, __r3_args, __r3_offsets,
              typename __r3_make_index_list<sizeof...(__r3_a)>::__r3_type{});
}
}  // namespace __r3_detail
extern "C" void __r3_entry(const unsigned char* __r3_args, const unsigned long* __r3_offsets) {
  __r3_detail::__r3_invoke(&)";
  text += entry;
  text += ", __r3_args, __r3_offsets);\n}\n";
  for (const char* keyword : kKeywords)
    text += std::string("#pragma pop_macro(\"") + keyword + "\")\n";
  return text;
}

std::string to_text(llvm::Error error) { return llvm::toString(std::move(error)); }

// LLVM 18 and later abort the whole process ("Instruction Combining did not reach a fixpoint")
// when a bare instcombine needs more than one iteration, which the search's pass sequences hit
// now and then: a compile that would have been fine ended the sandbox child. Bare instcombine
// runs without that check; one given options is left as written.
std::string without_fixpoint_aborts(std::string_view passes) {
#if LLVM_VERSION_MAJOR >= 18
  static const std::regex bare(R"((^|[,(])instcombine(?=$|[,)]))");
  return std::regex_replace(std::string(passes), bare, "$1instcombine<no-verify-fixpoint>");
#else
  return std::string(passes);
#endif
}

}  // namespace

std::string run_pass_pipeline(llvm::Module& module, llvm::TargetMachine* machine,
                              std::string_view passes) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(machine);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgscc);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgscc, modules);
  llvm::ModulePassManager pipeline;
  const std::string checked = without_fixpoint_aborts(passes);
  if (llvm::Error error = builder.parsePassPipeline(pipeline, llvm::StringRef(checked))) {
    return "invalid pass pipeline '" + std::string(passes) + "': " + to_text(std::move(error));
  }
  pipeline.run(module, modules);
  std::string verifier_messages;
  llvm::raw_string_ostream verifier_out(verifier_messages);
  if (llvm::verifyModule(module, &verifier_out)) {
    std::string message = verifier_out.str();
    if (!message.empty() && message.back() == '\n') message.pop_back();  // callers end the line
    return "r3: the pass pipeline produced invalid IR: " + message;
  }
  return "";
}

HostEntry entry_of(const HostKernel& kernel) { return kernel.entry(); }

std::string_view llvm_version() { return LLVM_VERSION_STRING; }

const std::string& host_target() {
  static const std::string target =
      llvm::sys::getProcessTriple() + " " + llvm::sys::getHostCPUName().str();
  return target;
}

std::string check_pass_pipeline(std::string_view passes) {
  initialise_native_target();
  llvm::LLVMContext context;
  llvm::Module empty("r3-pipeline-check", context);
  return run_pass_pipeline(empty, nullptr, passes.empty() ? "default<O2>" : passes);
}

HostCompileResult compile_host_kernel(const Source& source, std::string_view entry,
                                      std::string_view passes) {
  initialise_native_target();
  HostCompileResult result;
  const std::string triple = llvm::sys::getProcessTriple();

  Source with_entry = source;
  with_entry.text += entry_thunk(entry);
  auto context = std::make_unique<llvm::LLVMContext>();
  auto start = Clock::now();
  std::unique_ptr<llvm::Module> module = emit_ir(with_entry, *context, result.diagnostics);
  result.frontend_seconds = seconds_since(start);
  if (!module) {
    result.failed_at = Stage::frontend;
    if (result.diagnostics.find(kThunkFile) != std::string::npos) {
      result.diagnostics += "r3: the entry function '" + std::string(entry) +
                            "' could not be called from " + source.name +
                            ": is it declared there, with that exact name, and not overloaded?\n";
    }
    return result;
  }

  auto machine_builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machine_builder) {
    result.failed_at = Stage::codegen;
    result.diagnostics +=
        "r3: this CPU is not supported by LLVM: " + to_text(machine_builder.takeError()) + "\n";
    return result;
  }
  auto machine = machine_builder->createTargetMachine();
  if (!machine) {
    result.failed_at = Stage::codegen;
    result.diagnostics += "r3: " + to_text(machine.takeError()) + "\n";
    return result;
  }
  module->setDataLayout((*machine)->createDataLayout());
  module->setTargetTriple(triple);

  start = Clock::now();
  std::string pass_error =
      run_pass_pipeline(*module, machine->get(), passes.empty() ? "default<O2>" : passes);
  result.passes_seconds = seconds_since(start);
  if (!pass_error.empty()) {
    result.failed_at = Stage::passes;
    result.diagnostics += pass_error + "\n";
    return result;
  }

  start = Clock::now();
  auto jit =
      llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*machine_builder)).create();
  if (!jit) {
    result.failed_at = Stage::codegen;
    result.diagnostics += "r3: " + to_text(jit.takeError()) + "\n";
    return result;
  }
  auto code_bytes = std::make_shared<std::uint64_t>(0);
  (*jit)->getObjTransformLayer().setTransform(
      [code_bytes](std::unique_ptr<llvm::MemoryBuffer> object)
          -> llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> {
        *code_bytes += object->getBufferSize();
        return object;
      });
  // Kernels may call the C library and libm (memcpy, expf, ...) of this process.
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process) {
    result.failed_at = Stage::codegen;
    result.diagnostics += "r3: " + to_text(process.takeError()) + "\n";
    return result;
  }
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  if (llvm::Error error =
          (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(context)))) {
    result.failed_at = Stage::codegen;
    result.diagnostics += "r3: " + to_text(std::move(error)) + "\n";
    return result;
  }
  auto address = (*jit)->lookup(kEntrySymbol);
  result.codegen_seconds = seconds_since(start);
  if (!address) {
    result.failed_at = Stage::codegen;
    result.diagnostics += "r3: linking the kernel failed: " + to_text(address.takeError()) + "\n";
    return result;
  }
  result.code_bytes = *code_bytes;
  result.kernel = std::make_shared<const HostKernel>(std::move(*jit), address->toPtr<HostEntry>());
  return result;
}

}  // namespace r3::compiler
