// A CUDA driver-API application (no CUDA runtime): it compiles its kernel to PTX with NVRTC at
// run time, loads the PTX text with cuModuleLoadData, sets a __constant__ through
// cuModuleGetGlobal and launches with cuLaunchKernel. For recording with
// `r3 record -- cuda_driver_api N STEPS [managed]`: the recorder sees a CUfunction (not a
// CUkernel), PTX text rather than a fat binary, and a module global of a module the application
// loaded itself. With `managed`, y is managed memory, which the recorder does not record.
#include <cuda.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

const char* kSource = R"(
__constant__ float scale;
extern "C" __global__ void scaled_axpy(int n, float a, const float* x, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = scale * (a * x[i] + y[i]);
}
)";

void check(CUresult rc, const char* call) {
  if (rc == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(rc, &name);
  std::fprintf(stderr, "%s: %s\n", call, name ? name : "unknown error");
  std::exit(1);
}
#define CHECK(call) check((call), #call)

std::string compile_to_ptx(int major, int minor) {
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, kSource, "scaled_axpy.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS) {
    std::fprintf(stderr, "nvrtcCreateProgram failed\n");
    std::exit(1);
  }
  const std::string arch = "--gpu-architecture=compute_" + std::to_string(major * 10 + minor);
  const char* options[] = {arch.c_str()};
  if (nvrtcCompileProgram(program, 1, options) != NVRTC_SUCCESS) {
    std::size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, log.data());
    std::fprintf(stderr, "NVRTC: %s\n", log.c_str());
    std::exit(1);
  }
  std::size_t size = 0;
  nvrtcGetPTXSize(program, &size);
  std::string ptx(size, '\0');
  nvrtcGetPTX(program, ptx.data());
  nvrtcDestroyProgram(&program);
  return ptx;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1 << 20;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 4;
  const bool managed = argc > 3 && std::string(argv[3]) == "managed";
  if (n < 1 || steps < 1 || (argc > 3 && !managed)) {
    std::fprintf(stderr, "usage: cuda_driver_api [N >= 1 [STEPS >= 1 [managed]]]\n");
    return 2;
  }
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  int major = 0, minor = 0;
  CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  const std::string ptx = compile_to_ptx(major, minor);

  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx.c_str()));
  CUfunction kernel;
  CHECK(cuModuleGetFunction(&kernel, module, "scaled_axpy"));
  CUdeviceptr scale = 0;
  std::size_t scale_size = 0;
  CHECK(cuModuleGetGlobal(&scale, &scale_size, module, "scale"));
  const float half = 0.5f;
  CHECK(cuMemcpyHtoD(scale, &half, sizeof half));

  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = float(i % 13), y[i] = 1.0f;
  CUdeviceptr dx = 0, dy = 0;
  CHECK(cuMemAlloc(&dx, n * sizeof(float)));
  if (managed)
    CHECK(cuMemAllocManaged(&dy, n * sizeof(float), CU_MEM_ATTACH_GLOBAL));
  else
    CHECK(cuMemAlloc(&dy, n * sizeof(float)));
  CHECK(cuMemcpyHtoD(dx, x.data(), n * sizeof(float)));
  CHECK(cuMemcpyHtoD(dy, y.data(), n * sizeof(float)));
  const unsigned threads = 256, blocks = (unsigned(n) + threads - 1) / threads;
  for (int s = 0; s < steps; ++s) {
    float a = 1.0f + float(s);
    void* args[] = {(void*)&n, &a, &dx, &dy};
    CHECK(cuLaunchKernel(kernel, blocks, 1, 1, threads, 1, 1, 0, nullptr, args, nullptr));
  }
  CHECK(cuMemcpyDtoH(y.data(), dy, n * sizeof(float)));
  double sum = 0;
  for (float v : y) sum += v;
  std::printf("driver api: %d steps over %d elements: sum %.6f\n", steps, n, sum);
  CHECK(cuMemFree(dx));
  CHECK(cuMemFree(dy));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease(device));
  return 0;
}
