// What the CUDA injection libraries (the recorder and r3 apply's) learn from the driver: a
// launched function's names and parameter layout, and the application's allocations from the
// driver callbacks of its memory calls. A runtime-API launch passes a CUkernel (the library API)
// where the driver API passes a CUfunction; both are asked for.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "r3/capture.hpp"

namespace r3::record::cuda {

struct FunctionNames {
  std::string name, demangled, label;
  bool is_library_kernel = false;  // a CUkernel launched as a CUfunction
};

// The mangled name (empty when the driver gives none) and its demangled form.
FunctionNames names_of(CUfunction f);

// The parameters' offsets and sizes.
std::vector<capture::Param> params_of(CUfunction f, bool library_kernel);

std::string demangle(const std::string& name);

// The driver's name of a status ("CUDA_ERROR_ILLEGAL_ADDRESS"), or its number when the driver
// does not know it.
std::string error_name(CUresult rc);

// The driver calls that allocate or free device memory (CUPTI driver-API callback ids).
inline constexpr CUpti_CallbackId kMemoryCalls[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz};

// What one of those callbacks says: an allocation (at the exit of a call that succeeded), a
// managed one, or a free (at its entry, while the address is still the allocation's).
struct MemoryEvent {
  enum class Kind { allocated, managed, freed } kind = Kind::allocated;
  CUdeviceptr address = 0;
  std::size_t bytes = 0;  // 0 for a free
};
std::optional<MemoryEvent> memory_event(CUpti_CallbackId id, const CUpti_CallbackData* cb);

// Kernel records of CUPTI's activity API, in the version of the CUPTI built against.
#if CUPTI_API_VERSION >= 130000
using KernelActivity = CUpti_ActivityKernel10;
#else
using KernelActivity = CUpti_ActivityKernel9;
#endif

// CUPTI's request for an activity buffer: 4 MiB from aligned_alloc, which the completion
// callback frees.
void CUPTIAPI request_activity_buffer(uint8_t** buffer, size_t* size, size_t* max_records);

// Calls `f` with each kernel record of a completed activity buffer.
template <typename F>
void for_each_kernel_record(uint8_t* buffer, std::size_t valid, F&& f) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
        record->kind == CUPTI_ACTIVITY_KIND_KERNEL)
      f(*reinterpret_cast<const KernelActivity*>(record));
  }
}

}  // namespace r3::record::cuda
