#include "frontend.hpp"

#include <llvm/Config/llvm-config.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Driver/Compilation.h>
#include <clang/Driver/Driver.h>
#include <clang/Driver/Job.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

namespace r3::compiler {
namespace {

constexpr const char* kVirtualDirectory = "/r3-virtual";

// Declarations a CUDA kernel commonly uses, for parsing without the CUDA headers.
constexpr const char* kCudaPrelude = R"(#pragma once
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __restrict__ __restrict
#include <__clang_cuda_builtin_vars.h>
extern "C" __device__ void __syncthreads(void);
template <class T> __device__ T __ldg(const T* p) { return *p; }
)";

}  // namespace

std::filesystem::path cuda_toolkit() {
  for (const char* variable : {"CUDA_PATH", "CUDA_HOME"}) {
    if (const char* path = std::getenv(variable); path != nullptr && *path != '\0') return path;
  }
  std::error_code ec;
  if (std::filesystem::exists("/usr/local/cuda/include/cuda_runtime.h", ec))
    return "/usr/local/cuda";
  return {};
}

namespace {

// The virtual files the front end may read: the CUDA 13 headers Clang 16 expects but CUDA 13
// no longer ships (empty is enough), the prelude for parsing without the toolkit, and the
// (empty) source from which the CUDA headers are precompiled.
llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> file_system() {
  auto memory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  const std::string dir = kVirtualDirectory;
  memory->addFile(dir + "/texture_fetch_functions.h", 0, llvm::MemoryBuffer::getMemBuffer(""));
  memory->addFile(dir + "/texture_indirect_functions.h", 0, llvm::MemoryBuffer::getMemBuffer(""));
  memory->addFile(dir + "/r3_cuda_prelude.h", 0, llvm::MemoryBuffer::getMemBuffer(kCudaPrelude));
  memory->addFile(dir + "/r3_precompiled_cuda.cuh", 0, llvm::MemoryBuffer::getMemBuffer(""));
  auto overlay =
      llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
  overlay->pushOverlay(memory);
  return overlay;
}

}  // namespace

std::filesystem::path clang_resource_dir() {
  if (const char* dir = std::getenv("R3_CLANG_RESOURCE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return R3_CLANG_RESOURCE_DIR_DEFAULT;
}

namespace {

#if LLVM_VERSION_MAJOR >= 19
const std::string kNewestKnownCuda = "12.5";
#else
const std::string kNewestKnownCuda = "11.8";
#endif

struct Precompiled {
  std::string use;       // -include-pch this file
  std::string generate;  // or: write a PCH of the source's headers to this file
};

bool run(const Source& source, Dialect dialect, const std::string& cuda_arch,
         clang::FrontendAction& action, std::string& diagnostics, const Precompiled& pch) {
  llvm::raw_string_ostream out(diagnostics);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> options = new clang::DiagnosticOptions();
  options->ShowColors = false;
  clang::DiagnosticsEngine driver_diagnostics(
      llvm::IntrusiveRefCntPtr<clang::DiagnosticIDs>(new clang::DiagnosticIDs()), &*options,
      new clang::TextDiagnosticPrinter(out, &*options), /*ShouldOwnClient=*/true);
  // The driver does not apply -W options to its own diagnostics: Clang 16 knows CUDA up to
  // 11.8 and would warn about every newer toolkit, which parses fine.
  driver_diagnostics.setSeverityForGroup(clang::diag::Flavor::WarningOrError,
                                         "unknown-cuda-version", clang::diag::Severity::Ignored);
  const std::string triple = llvm::sys::getProcessTriple();

  // The driver turns an ordinary command line into the front end's (cc1) arguments: header
  // search paths of this system's C++ library, target features, ...
  std::vector<std::string> arguments = {"clang++"};
  if (dialect == Dialect::cpp) {
    arguments.insert(arguments.end(), {"-x", "c++", "-std=c++17", "-target", triple});
  } else {
    arguments.insert(
        arguments.end(),
        {"-x", "cuda", "-std=c++17", "--cuda-device-only", "--cuda-gpu-arch=" + cuda_arch,
         "-nocudalib", "-Wno-unknown-cuda-version", "-I" + std::string(kVirtualDirectory)});
    if (std::filesystem::path toolkit = cuda_toolkit(); !toolkit.empty()) {
      arguments.push_back("--cuda-path=" + toolkit.string());
      // A toolkit newer than this Clang knows has no SDK version in the front end, which then
      // lowers <<<...>>> to the pre-9.2 cudaConfigureCall that CUDA 12/13 no longer declare: name
      // the newest version Clang knows, whose launch sequence the newer toolkits keep.
      arguments.insert(arguments.end(), {"-Xclang", "-target-sdk-version=" + kNewestKnownCuda});
      // CUDA 13 moved cooperative_groups and libcu++ under include/cccl, where nvcc looks.
      if (std::filesystem::path cccl = toolkit / "include" / "cccl"; std::filesystem::is_directory(cccl))
        arguments.push_back("-isystem" + cccl.string());
    } else {
      arguments.insert(arguments.end(), {"-nocudainc", "-include", "r3_cuda_prelude.h"});
    }
  }
  if (!pch.use.empty()) arguments.insert(arguments.end(), {"-include-pch", pch.use});
  arguments.insert(arguments.end(),
                   {"-O2",
                    // IR without optimisation but also without `optnone`, so that a pass
                    // pipeline sees it all.
                    "-Xclang", "-disable-llvm-passes", "-fno-color-diagnostics", "-resource-dir",
                    clang_resource_dir().string(), "-S", "-emit-llvm", source.name});
  for (const auto& [name, value] : source.defines) arguments.push_back("-D" + name + "=" + value);
  for (const auto& dir : source.include_dirs) arguments.push_back("-I" + dir.string());
  for (const auto& flag : source.flags) arguments.push_back(flag);
  std::vector<const char*> argv;
  for (const std::string& argument : arguments) argv.push_back(argument.c_str());

  auto vfs = file_system();
  clang::driver::Driver driver("/usr/bin/clang++", triple, driver_diagnostics, "r3", vfs);
  driver.setCheckInputsExist(false);  // the source lives in memory
  std::unique_ptr<clang::driver::Compilation> compilation(driver.BuildCompilation(argv));
  if (!compilation || driver_diagnostics.hasErrorOccurred()) return false;
  const clang::driver::JobList& jobs = compilation->getJobs();
  if (jobs.size() != 1 || !llvm::isa<clang::driver::Command>(*jobs.begin())) {
    out << "r3: the compiler flags asked for more than one compilation step\n";
    return false;
  }
  const auto& command = llvm::cast<clang::driver::Command>(*jobs.begin());

  auto invocation = std::make_shared<clang::CompilerInvocation>();
  if (!clang::CompilerInvocation::CreateFromArgs(*invocation, command.getArguments(),
                                                 driver_diagnostics)) {
    return false;
  }
  if (!pch.generate.empty()) {
    invocation->getFrontendOpts().ProgramAction = clang::frontend::GeneratePCH;
    invocation->getFrontendOpts().OutputFile = pch.generate;
  }
  clang::CompilerInstance instance;
  instance.setInvocation(std::move(invocation));
  instance.createDiagnostics(new clang::TextDiagnosticPrinter(out, &instance.getDiagnosticOpts()),
                             /*ShouldOwnClient=*/true);
  instance.createFileManager(vfs);
  // "1 error generated." goes with the diagnostics, not to this process's stderr.
  instance.setVerboseOutputStream(out);
  instance.getPreprocessorOpts().addRemappedFile(
      source.name, llvm::MemoryBuffer::getMemBufferCopy(source.text, source.name).release());
  bool ok = instance.ExecuteAction(action);
  out.flush();
  return ok && !instance.getDiagnostics().hasErrorOccurred();
}

// The CUDA headers Clang includes before every CUDA source take ten times as long to parse as a
// typical kernel; they are precompiled once per process, into a file removed at exit. Empty when
// that failed (then every parse reads the headers).
class CudaHeaders {
 public:
  // The precompiled headers for `arch`, made on first use.
  static std::string pch(const std::string& arch) {
    static CudaHeaders instance;
    std::lock_guard lock(instance.mutex_);
    auto [it, added] = instance.paths_.emplace(arch, "");
    if (added) it->second = make(arch);
    return it->second;
  }

 private:
  static std::string make(const std::string& arch) {
    if (cuda_toolkit().empty()) return "";  // the prelude is small
    std::string path = (std::filesystem::temp_directory_path() / "r3-cuda-headers-XXXXXX").string();
    const int fd = mkstemp(path.data());
    if (fd < 0) return "";
    close(fd);
    Source empty;
    empty.name = std::string(kVirtualDirectory) + "/r3_precompiled_cuda.cuh";
    clang::GeneratePCHAction action;
    std::string diagnostics;
    if (run(empty, Dialect::cuda, arch, action, diagnostics, {"", path})) return path;
    // Slower, not wrong: every parse then reads the headers, and reports what is wrong with
    // them itself.
    std::filesystem::remove(path);
    return "";
  }
  ~CudaHeaders() {
    std::error_code ec;
    for (const auto& [arch, path] : paths_) {
      if (!path.empty()) std::filesystem::remove(path, ec);
    }
  }
  std::mutex mutex_;
  std::map<std::string, std::string> paths_;
};

}  // namespace

bool run_frontend(const Source& source, Dialect dialect, clang::FrontendAction& action,
                  std::string& diagnostics, const std::string& cuda_arch) {
  // Extra flags may change the language options a PCH must share; defines may not.
  std::string pch;
  if (dialect == Dialect::cuda && source.flags.empty()) pch = CudaHeaders::pch(cuda_arch);
  return run(source, dialect, cuda_arch, action, diagnostics, {pch, ""});
}

std::unique_ptr<llvm::Module> emit_ir(const Source& source, llvm::LLVMContext& context,
                                      std::string& diagnostics) {
  clang::EmitLLVMOnlyAction action(&context);
  if (!run_frontend(source, Dialect::cpp, action, diagnostics)) return nullptr;
  return action.takeModule();
}

}  // namespace r3::compiler
