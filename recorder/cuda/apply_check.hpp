// `r3 apply --check` (libr3apply_cuda.so): the first launch of each substituted kernel also runs
// the application's own kernel on the same memory, and the winner's results are compared with
// its results, with the run's tolerances. The memory is every live allocation the application
// made (tracked from its memory calls): copied to the host before, the original run and its
// results kept, the memory restored, then the winner run as the application's launch. On a
// mismatch the original's results are written back, so that the application goes on with them.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "apply_manifest.hpp"
#include "launched_function.hpp"
#include "r3/capture.hpp"

namespace r3::record::cuda {

// The application's live device allocations (managed ones included), from memory_event().
class Allocations {
 public:
  void on(const MemoryEvent& event);
  std::map<CUdeviceptr, std::size_t> snapshot() const;

 private:
  mutable std::mutex mutex_;  // guards live_ only; nothing else is taken while it is held
  std::map<CUdeviceptr, std::size_t> live_;
};

struct CheckedRegion {
  CUdeviceptr address = 0;
  std::size_t bytes = 0;
  capture::ElementType type = capture::ElementType::unknown;  // from the pointer reaching it
  std::string expected;  // what the application's kernel left there
};

// What the application's kernel left in memory, to compare the winner's results with.
struct OriginalResults {
  std::vector<CheckedRegion> regions;
};

// Runs `launch_original` (the application's launch, unchanged) on the current memory and
// returns what it left, the memory as it was before afterwards; nullopt, with `why`, when it
// could not (the memory could not be copied, the launch failed). `types`: element types by the
// address a typed pointer argument holds.
std::optional<OriginalResults> run_original(
    const std::map<CUdeviceptr, std::size_t>& allocations,
    const std::map<CUdeviceptr, capture::ElementType>& types,
    const std::function<CUresult()>& launch_original, std::string& why);

// Compares the memory, after the winner ran, with the original's results: "" when every region
// matches (floating-point types within their tolerance, others bit for bit), else what differs,
// with the original's results written back.
std::string compare_with_original(const OriginalResults& original,
                                  const std::vector<TypeTolerance>& tolerances);

// The element types of the memory a launch's pointer arguments reach: by the address each
// pointer argument holds, from the kernel's demangled signature.
std::map<CUdeviceptr, capture::ElementType> argument_types(
    const std::string& demangled, const std::vector<capture::Param>& params, void** kernel_params);

}  // namespace r3::record::cuda
