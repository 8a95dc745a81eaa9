#include "r3/replay/backend.hpp"

#include "r3/config.hpp"
#include "r3/error.hpp"
#include "simulated_backend.hpp"

#if R3_HAVE_CUDA
#include "cuda_backend.hpp"
#include "translate.hpp"
#endif
#if R3_HAVE_LLVM
#include "host_backend.hpp"
#include "r3/compiler/host_compiler.hpp"
#endif

namespace r3::replay {

std::string_view to_string(AddressMode mode) {
  return mode == AddressMode::same_address ? "same address" : "relocated";
}

Hash128 Variant::key() const {
  Hasher hasher;
  hasher.update_field(source_text).update_field(entry).update_field(passes);
  hasher.update_field(replay::to_string(compiler));
  for (const auto& [name, value] : defines) hasher.update_field(name).update_field(value);
  hasher.update_field("|");
  for (const auto& dir : include_dirs) hasher.update_field(dir.string());
  hasher.update_field("|");
  for (const auto& flag : flags) hasher.update_field(flag);
  if (block) {
    hasher.update(&block->x, sizeof block->x).update(&block->y, sizeof block->y);
    hasher.update(&block->z, sizeof block->z);
    if (keep_grid) hasher.update_field("keep_grid");
  }
  return hasher.digest();
}

std::string check_passes(std::string_view passes) {
#if R3_HAVE_LLVM
  return compiler::check_pass_pipeline(passes);
#else
  (void)passes;
  return "";
#endif
}

std::unique_ptr<Backend> make_backend(std::string_view backend, std::string_view options) {
  if (backend == "simulate") return make_simulated_backend(options);
  if (backend == "host") {
#if R3_HAVE_LLVM
    return make_host_backend();
#else
    throw NotAvailableError(
        "the host backend needs Clang/LLVM 19, which this build of r3 was configured without");
#endif
  }
  if (backend == "cuda") {
#if R3_HAVE_CUDA
    return make_cuda_backend();
#else
    throw NotAvailableError(
        "the CUDA backend needs the CUDA Toolkit (>= 12.4), which this build of r3 was "
        "configured without");
#endif
  }
  throw Error("no replay backend for captures recorded with '" + std::string(backend) + "'");
}

Translation translate(std::string_view backend, std::string_view context, const Variant& variant) {
#if R3_HAVE_CUDA
  if (backend == "cuda")
    return cuda::translate_source(cuda::decode_facts(context), variant,
                                  cuda::split_flags(variant.flags));
#else
  (void)context;
  (void)variant;
#endif
  throw Error("no compile worker translates variants of the '" + std::string(backend) +
              "' backend in this build");
}

}  // namespace r3::replay
