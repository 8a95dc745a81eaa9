// A CUDA variant's source to code for one GPU architecture, with no device and no driver: NVRTC
// gives a cubin, Clang/NVPTX gives PTX (the driver's JIT finishes it where it is loaded). What
// the CUDA backend does in process, and what a compile worker process does for it.
#pragma once

#include <string>
#include <string_view>

#include "nvrtc_compiler.hpp"
#include "r3/replay/backend.hpp"

namespace r3::replay::cuda {

// What translating a variant needs to know of its kernel.
struct KernelFacts {
  std::string kernel_name;     // as recorded (mangled)
  std::string instance_name;   // the recorded template instance ("MatrixMul<32>"), or ""
  std::string demangled_name;  // as recorded, or ""
  std::string recorded_source;  // the capture's source of the kernel, or ""
  int compute_capability = 0;  // 90
  std::string architecture;    // "sm_90"
};

std::string encode(const KernelFacts& facts);
KernelFacts decode_facts(std::string_view text);  // throws FormatError

// Whether the variant is compiled from a source (its own or the recorded one) rather than taken
// from the recorded cubin or PTX.
bool from_source(const KernelFacts& facts, const Variant& variant);

// The variant's code from its source. Its diagnostics say what failed (a result, not an error).
Translation translate_source(const KernelFacts& facts, const Variant& variant,
                             const CudaFlags& flags);

}  // namespace r3::replay::cuda
