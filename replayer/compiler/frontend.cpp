#include "frontend.hpp"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Driver/Compilation.h>
#include <clang/Driver/Driver.h>
#include <clang/Driver/Job.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>

namespace r3::compiler {

std::filesystem::path clang_resource_dir() {
  if (const char* dir = std::getenv("R3_CLANG_RESOURCE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return R3_CLANG_RESOURCE_DIR_DEFAULT;
}

std::unique_ptr<llvm::Module> emit_ir(const Source& source, const std::string& triple,
                                      llvm::LLVMContext& context, std::string& diagnostics) {
  llvm::raw_string_ostream out(diagnostics);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> options = new clang::DiagnosticOptions();
  options->ShowColors = false;
  clang::DiagnosticsEngine driver_diagnostics(
      llvm::IntrusiveRefCntPtr<clang::DiagnosticIDs>(new clang::DiagnosticIDs()), &*options,
      new clang::TextDiagnosticPrinter(out, &*options), /*ShouldOwnClient=*/true);

  // The driver turns an ordinary command line into the front end's (cc1) arguments: header
  // search paths of this system's C++ library, target features, ...
  std::vector<std::string> arguments = {
      "clang++", "-x", "c++", "-std=c++17", "-O2",
      // IR without optimisation but also without `optnone`, so the pass pipeline sees it all.
      "-Xclang", "-disable-llvm-passes", "-fno-color-diagnostics", "-target", triple,
      "-resource-dir", clang_resource_dir().string(), "-S", "-emit-llvm", source.name};
  for (const auto& [name, value] : source.defines) arguments.push_back("-D" + name + "=" + value);
  for (const auto& dir : source.include_dirs) arguments.push_back("-I" + dir.string());
  for (const auto& flag : source.flags) arguments.push_back(flag);
  std::vector<const char*> argv;
  for (const std::string& argument : arguments) argv.push_back(argument.c_str());

  clang::driver::Driver driver("/usr/bin/clang++", triple, driver_diagnostics, "r3");
  driver.setCheckInputsExist(false);  // the source lives in memory
  std::unique_ptr<clang::driver::Compilation> compilation(driver.BuildCompilation(argv));
  if (!compilation || driver_diagnostics.hasErrorOccurred()) return nullptr;
  const clang::driver::JobList& jobs = compilation->getJobs();
  if (jobs.size() != 1 || !llvm::isa<clang::driver::Command>(*jobs.begin())) {
    out << "r3: the compiler flags asked for more than one compilation step\n";
    return nullptr;
  }
  const auto& command = llvm::cast<clang::driver::Command>(*jobs.begin());

  auto invocation = std::make_shared<clang::CompilerInvocation>();
  if (!clang::CompilerInvocation::CreateFromArgs(*invocation, command.getArguments(),
                                                 driver_diagnostics)) {
    return nullptr;
  }
  clang::CompilerInstance instance;
  instance.setInvocation(std::move(invocation));
  instance.createDiagnostics(new clang::TextDiagnosticPrinter(out, &instance.getDiagnosticOpts()),
                             /*ShouldOwnClient=*/true);
  instance.getPreprocessorOpts().addRemappedFile(
      source.name, llvm::MemoryBuffer::getMemBufferCopy(source.text, source.name).release());
  clang::EmitLLVMOnlyAction action(&context);
  bool ok = instance.ExecuteAction(action);
  out.flush();
  if (!ok) return nullptr;
  return action.takeModule();
}

}  // namespace r3::compiler
