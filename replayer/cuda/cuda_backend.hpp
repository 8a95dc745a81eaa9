// The CUDA replay backend (docs/architecture.md, "Replay"): variants compiled by NVRTC, by
// Clang → LLVM IR → NVPTX (with LLVM), or taken from the capture's PTX/cubin; loaded with
// cuModuleLoadDataEx; launched on memory placed at the recorded addresses; verified and timed on
// the GPU.
#pragma once

#include <memory>

#include "r3/replay/backend.hpp"

namespace r3::replay {
std::unique_ptr<Backend> make_cuda_backend();
}  // namespace r3::replay
