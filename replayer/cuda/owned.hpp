// Owners of CUDA driver handles: each releases its handle when it goes. A candidate's module,
// the backend's stream, events and buffers are released once nothing needs them, so device
// memory stays flat over thousands of candidates. Release errors are ignored: after a sticky
// error the context is gone with everything in it, and a destructor cannot report anything.
#pragma once

#include <utility>

#include "driver.hpp"

namespace r3::replay::cuda {

template <class Handle, auto Release>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle handle) : handle_(handle) {}
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }
  ~Owned() { reset(); }

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != Handle{}; }
  // For the driver's create calls: releases what is held, then lends the slot.
  Handle* replace() {
    reset();
    return &handle_;
  }
  void reset() {
    if (handle_ != Handle{}) (driver().*Release)(handle_);
    handle_ = Handle{};
  }

 private:
  Handle handle_{};
};

using Module = Owned<CUmodule, &Driver::cuModuleUnload>;
using Stream = Owned<CUstream, &Driver::cuStreamDestroy>;
using Event = Owned<CUevent, &Driver::cuEventDestroy>;
using DeviceBuffer = Owned<CUdeviceptr, &Driver::cuMemFree>;

}  // namespace r3::replay::cuda
