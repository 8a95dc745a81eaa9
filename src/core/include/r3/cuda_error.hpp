// A failing CUDA driver call, as the CUDA recorder and the CUDA replay backend both report it.
// No CUDA header here: the status is the driver's CUresult as an integer, and its name and text
// come from the caller's driver (linked by the recorder, opened at run time by the replayer).
// Where cuda.h is included, the status values below are checked against it (static_assert).
#pragma once

#include <string>
#include <string_view>

#include "r3/error.hpp"

namespace r3 {

// The CUresult values after which the driver has lost the context for good: nothing runs in it
// again and the process must be replaced (CUDA's documentation of each).
namespace cuda_status {
inline constexpr int success = 0;
inline constexpr int illegal_address = 700;
inline constexpr int launch_timeout = 702;
inline constexpr int context_is_destroyed = 709;
inline constexpr int assert_failed = 710;
inline constexpr int hardware_stack_error = 714;
inline constexpr int illegal_instruction = 715;
inline constexpr int misaligned_address = 716;
inline constexpr int invalid_address_space = 717;
inline constexpr int invalid_pc = 718;
inline constexpr int launch_failed = 719;
inline constexpr int ecc_uncorrectable = 214;
}  // namespace cuda_status

bool is_sticky_cuda_status(int status);

// The API a call's text names: "driver().cuMemMap(a, b)" and "cuMemMap(a, b)" -> "cuMemMap".
std::string cuda_api_name(std::string_view call);

class CudaError : public IoError {
 public:
  // `call`: the call as written (its API name is kept); `description`: the driver's name and
  // text of the status ("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access ...").
  CudaError(std::string_view call, int status, const std::string& description);
  int status() const noexcept { return status_; }
  // The context is lost (illegal address, trap, ...) and must be rebuilt before anything else.
  bool sticky() const noexcept { return is_sticky_cuda_status(status_); }

 private:
  int status_;
};

}  // namespace r3
