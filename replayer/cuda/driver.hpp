// The CUDA driver API, resolved at run time: libcuda.so.1 is opened with dlopen and every entry
// point is taken once through cuGetProcAddress at the ABI of the headers r3 was built with. A
// build with CUDA thus runs (and tests) on machines without a GPU driver; the CUDA backend then
// says why it cannot run. Status codes become CudaErrors naming the call.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

#include "r3/capture.hpp"
#include "r3/cuda_error.hpp"
#include "r3/error.hpp"

namespace r3::replay::cuda {

#define R3_CUDA_DRIVER_FUNCTIONS(X)                                                                \
  X(cuInit)                                                                                        \
  X(cuDriverGetVersion)                                                                            \
  X(cuGetErrorName)                                                                                \
  X(cuGetErrorString)                                                                              \
  X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetAttribute)                    \
      X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)                 \
          X(cuDevicePrimaryCtxReset) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemGetInfo)        \
              X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoDAsync)      \
                  X(cuMemsetD32Async) X(cuMemsetD8) X(cuMemsetD8Async) X(cuMemcpyHtoDAsync) X(     \
                      cuMemcpyDtoHAsync) X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemCreate) \
                      X(cuMemRelease) X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess)                  \
                          X(cuMemGetAllocationGranularity) X(cuModuleLoadDataEx) X(cuModuleUnload) \
                              X(cuModuleGetFunction) X(cuModuleGetGlobal) X(cuFuncGetAttribute)    \
                                  X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuStreamCreate)        \
                                      X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate)   \
                                          X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) \
                                              X(cuEventElapsedTime) X(cuLinkCreate)                \
                                                  X(cuLinkAddData) X(cuLinkComplete)               \
                                                      X(cuLinkDestroy)

struct Driver {
#define R3_CUDA_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  R3_CUDA_DRIVER_FUNCTIONS(R3_CUDA_DRIVER_MEMBER)
#undef R3_CUDA_DRIVER_MEMBER
};

// A failing driver call (r3/cuda_error.hpp, shared with the CUDA recorder).
using CudaError = r3::CudaError;

// The driver, loaded on first use. Throws NotAvailableError (with the reason: no libcuda.so.1,
// a driver older than the headers, no device) when it cannot be used.
const Driver& driver();
// "" when driver() would succeed and a device is present, else why not.
std::string why_unavailable();

// "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
std::string describe(CUresult code);
// Throws CudaError for anything but CUDA_SUCCESS.
void check(CUresult code, const char* api);
#define R3_CU(call) ::r3::replay::cuda::check((call), #call)

// One GPU of this process (R3_CUDA_DEVICE modulo the visible ones, else 0), with its primary
// context current on the calling thread. Shared by every backend of the process. A sticky error
// (illegal address, trap, ...) loses the context for the rest of the process: CUDA cannot make
// a new one, so the process must be replaced (the sandbox does that).
class Device {
 public:
  static Device& instance();
  // On the calling thread (cheap; call before driver calls). Throws once the context is lost.
  void make_current();
  void mark_lost(const std::string& why);
  bool lost() const { return !lost_.empty(); }

  CUdevice handle() const { return device_; }
  int ordinal() const { return ordinal_; }
  // Its facts as a capture records them (r3/cuda_device.hpp, as the recorder reads them).
  const capture::DeviceInfo& info() const { return info_; }
  const std::string& name() const { return info_.name; }
  int attribute(CUdevice_attribute attribute) const;
  int compute_capability() const {  // 90 for sm_90
    return 10 * info_.compute_capability_major + info_.compute_capability_minor;
  }
  const std::string& architecture() const { return info_.architecture; }  // "sm_90"
  std::uint64_t l2_bytes() const { return info_.l2_cache_bytes; }

 private:
  Device();
  const Driver& driver_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  int ordinal_ = 0;
  capture::DeviceInfo info_;
  std::string lost_;  // why the context is lost; "" while it is usable
};

}  // namespace r3::replay::cuda
