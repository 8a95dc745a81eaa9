#include "r3/cuda_error.hpp"

#include <cctype>

namespace r3 {

bool is_sticky_cuda_status(int status) {
  using namespace cuda_status;
  switch (status) {
    case illegal_address:
    case launch_failed:
    case hardware_stack_error:
    case illegal_instruction:
    case misaligned_address:
    case invalid_address_space:
    case invalid_pc:
    case assert_failed:
    case launch_timeout:
    case context_is_destroyed:
    case ecc_uncorrectable:
      return true;
    default:
      return false;
  }
}

std::string cuda_api_name(std::string_view call) {
  if (auto at = call.find(".cu"); at != std::string_view::npos) call = call.substr(at + 1);
  std::size_t length = 0;
  while (length < call.size() &&
         (std::isalnum(static_cast<unsigned char>(call[length])) || call[length] == '_'))
    ++length;
  return std::string(call.substr(0, length));
}

CudaError::CudaError(std::string_view call, int status, const std::string& description)
    : IoError(cuda_api_name(call), cuda_api_name(call) + " failed: " + description),
      status_(status) {}

}  // namespace r3
