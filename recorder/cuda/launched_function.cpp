#include "launched_function.hpp"

#include <cxxabi.h>

#include <cstdlib>

namespace r3::record::cuda {

std::string demangle(const std::string& name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string result = status == 0 && out ? out : "";
  std::free(out);
  return result;
}

std::string error_name(CUresult rc) {
  const char* name = nullptr;
  cuGetErrorName(rc, &name);
  return name ? name : "CUresult " + std::to_string(static_cast<int>(rc));
}

FunctionNames names_of(CUfunction f) {
  FunctionNames n;
  const char* name = nullptr;
  if (cuFuncGetName(&name, f) == CUDA_SUCCESS && name) {
    n.name = name;
  } else if (cuKernelGetName(&name, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS && name) {
    n.name = name;
    n.is_library_kernel = true;
  }
  n.demangled = demangle(n.name);
  return n;
}

std::vector<capture::Param> params_of(CUfunction f, bool library_kernel) {
  std::vector<capture::Param> params;
  for (std::size_t i = 0;; ++i) {
    std::size_t offset = 0, size = 0;
    CUresult rc = library_kernel
                      ? cuKernelGetParamInfo(reinterpret_cast<CUkernel>(f), i, &offset, &size)
                      : cuFuncGetParamInfo(f, i, &offset, &size);
    if (rc != CUDA_SUCCESS) break;
    capture::Param p;
    p.offset = offset;
    p.size = size;
    params.push_back(p);
  }
  return params;
}

std::optional<MemoryEvent> memory_event(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  const bool exit = cb->callbackSite == CUPTI_API_EXIT;
  const bool ok = exit && cb->functionReturnValue &&
                  *static_cast<const CUresult*>(cb->functionReturnValue) == CUDA_SUCCESS;
  using Kind = MemoryEvent::Kind;
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      // These parameter blocks all begin with (CUdeviceptr* dptr, size_t bytesize).
      auto* p = static_cast<const cuMemAlloc_v2_params*>(cb->functionParams);
      if (!ok) return std::nullopt;
      return MemoryEvent{Kind::allocated, *p->dptr, p->bytesize};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      auto* p = static_cast<const cuMemAllocPitch_v2_params*>(cb->functionParams);
      if (!ok) return std::nullopt;
      return MemoryEvent{Kind::allocated, *p->dptr, *p->pPitch * p->Height};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      auto* p = static_cast<const cuMemAllocManaged_params*>(cb->functionParams);
      if (!ok) return std::nullopt;
      return MemoryEvent{Kind::managed, *p->dptr, p->bytesize};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz: {
      auto* p = static_cast<const cuMemFree_v2_params*>(cb->functionParams);
      if (exit) return std::nullopt;
      return MemoryEvent{Kind::freed, p->dptr, 0};
    }
    default:
      return std::nullopt;
  }
}

void CUPTIAPI request_activity_buffer(uint8_t** buffer, size_t* size, size_t* max_records) {
  constexpr std::size_t kBufferBytes = 4 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

}  // namespace r3::record::cuda
