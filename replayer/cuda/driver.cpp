#include "driver.hpp"

#include "r3/cuda_device.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>

#include "r3/log.hpp"

namespace r3::replay::cuda {
namespace {

struct Loaded {
  Driver driver;
  std::string error;  // why the driver cannot be used; "" when it can
};

Loaded load() {
  Loaded loaded;
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    loaded.error = std::string("no CUDA driver on this machine (dlopen libcuda.so.1: ") +
                   (why ? why : "not found") + ")";
    return loaded;
  }
  using GetProcAddress =
      CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get = reinterpret_cast<GetProcAddress>(dlsym(library, "cuGetProcAddress_v2"));
  if (get == nullptr) {
    loaded.error =
        "the CUDA driver is older than CUDA 12 (libcuda.so.1 has no cuGetProcAddress_v2)";
    return loaded;
  }
  std::string missing;
  auto resolve = [&](const char* symbol, void** slot) {
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (get(symbol, slot, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
        found != CU_GET_PROC_ADDRESS_SUCCESS || *slot == nullptr) {
      missing += (missing.empty() ? "" : ", ") + std::string(symbol);
      *slot = nullptr;
    }
  };
#define R3_CUDA_DRIVER_RESOLVE(name) resolve(#name, reinterpret_cast<void**>(&loaded.driver.name));
  R3_CUDA_DRIVER_FUNCTIONS(R3_CUDA_DRIVER_RESOLVE)
#undef R3_CUDA_DRIVER_RESOLVE
  if (!missing.empty()) {
    loaded.error = "the CUDA driver lacks entry points r3 was built for (CUDA " +
                   std::to_string(CUDA_VERSION / 1000) + "." +
                   std::to_string(CUDA_VERSION % 1000 / 10) + "): " + missing +
                   "; update the driver";
    return loaded;
  }
  CUresult status = loaded.driver.cuInit(0);
  if (status != CUDA_SUCCESS) {
    const char* name = nullptr;
    loaded.driver.cuGetErrorName(status, &name);
    loaded.error = std::string("cuInit failed: ") + (name ? name : "unknown error") +
                   (status == CUDA_ERROR_NO_DEVICE ? " (no CUDA device visible)" : "");
    return loaded;
  }
  int count = 0;
  if (loaded.driver.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
    loaded.error = "no CUDA device visible to this process";
  return loaded;
}

const Loaded& loaded() {
  static const Loaded instance = load();
  return instance;
}

}  // namespace

// The status values r3/cuda_error.hpp names without cuda.h.
static_assert(cuda_status::success == CUDA_SUCCESS);
static_assert(cuda_status::illegal_address == CUDA_ERROR_ILLEGAL_ADDRESS);
static_assert(cuda_status::launch_timeout == CUDA_ERROR_LAUNCH_TIMEOUT);
static_assert(cuda_status::context_is_destroyed == CUDA_ERROR_CONTEXT_IS_DESTROYED);
static_assert(cuda_status::assert_failed == CUDA_ERROR_ASSERT);
static_assert(cuda_status::hardware_stack_error == CUDA_ERROR_HARDWARE_STACK_ERROR);
static_assert(cuda_status::illegal_instruction == CUDA_ERROR_ILLEGAL_INSTRUCTION);
static_assert(cuda_status::misaligned_address == CUDA_ERROR_MISALIGNED_ADDRESS);
static_assert(cuda_status::invalid_address_space == CUDA_ERROR_INVALID_ADDRESS_SPACE);
static_assert(cuda_status::invalid_pc == CUDA_ERROR_INVALID_PC);
static_assert(cuda_status::launch_failed == CUDA_ERROR_LAUNCH_FAILED);
static_assert(cuda_status::ecc_uncorrectable == CUDA_ERROR_ECC_UNCORRECTABLE);
// And the attributes r3/cuda_device.hpp reads a device's facts with.
static_assert(cuda_attribute::multiprocessor_count == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
static_assert(cuda_attribute::l2_cache_size == CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
static_assert(cuda_attribute::compute_capability_major ==
              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(cuda_attribute::compute_capability_minor ==
              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);

const Driver& driver() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw NotAvailableError("the CUDA backend cannot run here: " + l.error);
  return l.driver;
}

std::string why_unavailable() { return loaded().error; }

std::string describe(CUresult code) {
  const Loaded& l = loaded();
  const char* name = nullptr;
  const char* text = nullptr;
  if (l.driver.cuGetErrorName) l.driver.cuGetErrorName(code, &name);
  if (l.driver.cuGetErrorString) l.driver.cuGetErrorString(code, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(static_cast<int>(code));
  if (text) out += std::string(": ") + text;
  return out;
}

void check(CUresult code, const char* api) {
  if (code != CUDA_SUCCESS) throw CudaError(api, static_cast<int>(code), describe(code));
}

Device& Device::instance() {
  static Device device;
  return device;
}

Device::Device() : driver_(driver()) {
  int count = 1;
  R3_CU(driver_.cuDeviceGetCount(&count));
  if (const char* ordinal = std::getenv("R3_CUDA_DEVICE"); ordinal && *ordinal)
    ordinal_ = std::max(0, std::atoi(ordinal)) % std::max(count, 1);
  R3_CU(driver_.cuDeviceGet(&device_, ordinal_));
  CudaDriverAnswers answers;
  answers.attribute = [this](int which) {
    return attribute(static_cast<CUdevice_attribute>(which));
  };
  char name[256] = {};
  R3_CU(driver_.cuDeviceGetName(name, sizeof name, device_));
  answers.name = name;
  std::size_t memory = 0;
  if (driver_.cuDeviceTotalMem(&memory, device_) == CUDA_SUCCESS) answers.memory_bytes = memory;
  driver_.cuDriverGetVersion(&answers.driver_version);
  answers.toolkit_version = CUDA_VERSION;
  info_ = cuda_device_info(answers);
  R3_CU(driver_.cuDevicePrimaryCtxRetain(&context_, device_));
  make_current();
  log::debug("CUDA device ", ordinal_, " of ", count, ": ", info_.name, " (", architecture(), ")");
}

void Device::make_current() {
  if (!lost_.empty())
    throw Error("the CUDA context of this process is lost (" + lost_ +
                "); nothing more can run in it");
  R3_CU(driver_.cuCtxSetCurrent(context_));
}

void Device::mark_lost(const std::string& why) {
  if (lost_.empty())
    log::warning("CUDA device ", ordinal_, " (", info_.name, "): context lost: ", why);
  lost_ = why;
}

int Device::attribute(CUdevice_attribute which) const {
  int value = 0;
  R3_CU(driver_.cuDeviceGetAttribute(&value, which, device_));
  return value;
}

}  // namespace r3::replay::cuda
