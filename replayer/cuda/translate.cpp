#include "translate.hpp"

#include <chrono>
#include <nlohmann/json.hpp>

#include "r3/config.hpp"
#include "r3/error.hpp"

#if R3_HAVE_LLVM
#include "r3/compiler/cuda_compiler.hpp"
#include "r3/elapsed.hpp"
#endif

namespace r3::replay::cuda {
namespace {

using nlohmann::json;

// Whether the variant's entry stands for the recorded template instance: left out, the
// instance itself ("saxpy_t<2>"), or the template's name ("saxpy_t", "ns::saxpy_t").
bool names_recorded_instance(const KernelFacts& facts, const Variant& variant) {
  const std::string& instance = facts.instance_name;
  if (instance.find('<') == std::string::npos) return false;
  const std::string& e = variant.entry;
  return e.empty() || e == instance || instance.starts_with(e + "<") ||
         instance.find("::" + e + "<") != std::string::npos;
}

}  // namespace

std::string encode(const KernelFacts& f) {
  return json{{"kernel_name", f.kernel_name},
              {"instance_name", f.instance_name},
              {"demangled_name", f.demangled_name},
              {"recorded_source", f.recorded_source},
              {"compute_capability", f.compute_capability},
              {"architecture", f.architecture}}
      .dump();
}

KernelFacts decode_facts(std::string_view text) {
  try {
    json j = json::parse(text);
    return KernelFacts{j.at("kernel_name").get<std::string>(),
                       j.at("instance_name").get<std::string>(),
                       j.at("demangled_name").get<std::string>(),
                       j.at("recorded_source").get<std::string>(),
                       j.at("compute_capability").get<int>(),
                       j.at("architecture").get<std::string>()};
  } catch (const json::exception& e) {
    throw FormatError(std::string("a CUDA kernel's translation context: ") + e.what());
  }
}

bool from_source(const KernelFacts& facts, const Variant& variant) {
  const std::string& text = variant.source_text.empty() ? facts.recorded_source : variant.source_text;
  return variant.compiler != replay::Compiler::recorded && !text.empty();
}

Translation translate_source(const KernelFacts& facts, const Variant& variant,
                             const CudaFlags& flags) {
  const auto start = std::chrono::steady_clock::now();
  Translation t;
  const std::string entry = variant.entry.empty() ? facts.kernel_name : variant.entry;
  const std::string& text = variant.source_text.empty() ? facts.recorded_source : variant.source_text;
  const std::string name =
      variant.source_name.empty() ? facts.kernel_name + ".cu" : variant.source_name;
  auto done = [&]() -> Translation {
    t.seconds = seconds_since(start);
    return t;
  };
  if (variant.compiler == replay::Compiler::nvrtc) {
    // A template kernel exists in the source's code only once instantiated: NVRTC does that
    // for the recorded instance named as an expression ("MatrixMulCUDA<32>"), also when the
    // entry names the template alone.
    const std::string nvrtc_entry =
        names_recorded_instance(facts, variant) ? facts.instance_name : entry;
    NvrtcOutput out = compile_nvrtc(name, text, nvrtc_entry, variant.defines,
                                    variant.include_dirs, flags, facts.compute_capability);
    t.ok = out.ok;
    t.diagnostics = out.log;
    t.bytes = std::move(out.image);
    t.function = out.function_name;
    return done();
  }
#if R3_HAVE_LLVM
  if (!flags.error.empty()) {
    t.diagnostics = flags.error;
    return done();
  }
  compiler::Source source;
  source.name = name;
  source.text = text;
  source.defines = variant.defines;
  source.include_dirs = variant.include_dirs;
  source.flags = flags.nvrtc;
  // A template kernel exists in Clang's code only once instantiated: the recorded instance is
  // instantiated explicitly, by its recorded signature, and looked up by its recorded name
  // (again without that line, should the source instantiate it explicitly itself).
  std::string clang_entry = entry;
  const bool instantiate = names_recorded_instance(facts, variant);
  if (instantiate) {
    source.text += "\ntemplate __global__ " + facts.demangled_name + ";\n";
    clang_entry = facts.kernel_name;
  }
  compiler::CudaCompileResult out =
      compiler::compile_cuda_kernel(source, clang_entry, variant.passes, facts.architecture);
  if (instantiate && !out.ok() &&
      out.diagnostics.find("explicit instantiation") != std::string::npos) {
    source.text = text;
    out = compiler::compile_cuda_kernel(source, clang_entry, variant.passes, facts.architecture);
  }
  t.ok = out.ok();
  t.diagnostics = out.diagnostics;
  t.bytes = std::move(out.ptx);
  t.function = out.function_name;
  t.ptx = true;
#else
  t.diagnostics =
      "the Clang/NVPTX compile path needs Clang/LLVM 19, which this build of r3 was "
      "configured without; use the nvrtc compiler";
#endif
  return done();
}

}  // namespace r3::replay::cuda
