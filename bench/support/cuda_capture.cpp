#include "cuda_capture.hpp"

#include <cmath>

#include <cxxabi.h>

#include <cstdlib>
#include <stdexcept>

#include "driver.hpp"
#include "nvrtc_compiler.hpp"

namespace r3::test {

using namespace r3::replay::cuda;

CudaArg pointer_arg(std::size_t buffer) {
  CudaArg arg;
  arg.bytes.resize(8);
  arg.pointers.push_back({0, buffer});
  arg.type = "pointer";
  return arg;
}

std::string record_cuda_launch(const std::filesystem::path& path, const CudaLaunchSpec& spec) {
  Device& device = Device::instance();
  device.make_current();
  const Driver& d = driver();
  NvrtcOutput cubin =
      compile_nvrtc("kernel.cu", spec.source, spec.entry, {}, {}, {}, device.compute_capability());
  if (!cubin.ok) throw std::runtime_error("test kernel does not compile: " + cubin.log);
  NvrtcOutput ptx = compile_nvrtc("kernel.cu", spec.source, spec.entry, {}, {}, {},
                                  device.compute_capability(), /*ptx=*/true);
  if (!ptx.ok) throw std::runtime_error("test kernel does not compile to PTX: " + ptx.log);

  std::vector<CUdeviceptr> addresses(spec.buffers.size());
  for (std::size_t i = 0; i < spec.buffers.size(); ++i)
    R3_CU(d.cuMemAlloc(&addresses[i], std::max<std::size_t>(spec.buffers[i].data.size(), 1)));
  auto patched = [&](std::vector<std::byte> bytes,
                     const std::vector<std::pair<std::size_t, std::size_t>>& pointers) {
    for (const auto& [offset, buffer] : pointers)
      std::memcpy(bytes.data() + offset, &addresses.at(buffer), 8);
    return bytes;
  };
  std::vector<std::vector<std::byte>> before;
  for (std::size_t i = 0; i < spec.buffers.size(); ++i) {
    before.push_back(patched(spec.buffers[i].data, spec.buffers[i].pointers));
    if (!before[i].empty()) R3_CU(d.cuMemcpyHtoD(addresses[i], before[i].data(), before[i].size()));
  }
  std::vector<std::byte> args;
  std::vector<capture::Param> params;
  for (const CudaArg& arg : spec.args) {
    std::size_t offset = (args.size() + arg.alignment - 1) / arg.alignment * arg.alignment;
    args.resize(offset);
    std::vector<std::byte> bytes = patched(arg.bytes, arg.pointers);
    args.insert(args.end(), bytes.begin(), bytes.end());
    params.push_back({offset, bytes.size(), !arg.pointers.empty(), arg.type});
  }

  CUmodule module = nullptr;
  CUfunction function = nullptr;
  R3_CU(d.cuModuleLoadDataEx(&module, cubin.image.data(), 0, nullptr, nullptr));
  R3_CU(d.cuModuleGetFunction(&function, module, cubin.function_name.c_str()));
  struct Global {
    std::string name;
    CUdeviceptr address = 0;
    std::vector<std::byte> before, after;
  };
  std::vector<Global> globals;
  for (const auto& [name, bytes] : spec.globals) {
    Global g{name, 0, bytes, std::vector<std::byte>(bytes.size())};
    std::size_t size = 0;
    R3_CU(d.cuModuleGetGlobal(&g.address, &size, module, name.c_str()));
    if (size != bytes.size()) throw std::runtime_error("global " + name + " has another size");
    R3_CU(d.cuMemcpyHtoD(g.address, bytes.data(), bytes.size()));
    globals.push_back(std::move(g));
  }
  std::size_t size = args.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, args.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  R3_CU(d.cuLaunchKernel(function, spec.grid.x, spec.grid.y, spec.grid.z, spec.block.x,
                         spec.block.y, spec.block.z, spec.shared_bytes, nullptr, nullptr, extra));
  R3_CU(d.cuCtxSynchronize());
  std::vector<std::vector<std::byte>> after(spec.buffers.size());
  for (std::size_t i = 0; i < spec.buffers.size(); ++i) {
    after[i].resize(before[i].size());
    if (!after[i].empty()) R3_CU(d.cuMemcpyDtoH(after[i].data(), addresses[i], after[i].size()));
  }
  for (Global& g : globals) R3_CU(d.cuMemcpyDtoH(g.after.data(), g.address, g.after.size()));
  d.cuModuleUnload(module);
  for (CUdeviceptr address : addresses) d.cuMemFree(address);

  capture::CaptureInfo info;
  info.command_line = "r3 test: record_cuda_launch";
  info.device.backend = "cuda";
  info.device.name = device.name();
  info.device.architecture = device.architecture();
  info.device.compute_capability_major = device.compute_capability() / 10;
  info.device.compute_capability_minor = device.compute_capability() % 10;
  auto writer = capture::CaptureWriter::create(path, info);
  auto content = [&](const std::string& text) {
    return writer.put_content(std::as_bytes(std::span(text.data(), text.size())));
  };
  capture::Kernel kernel;
  kernel.name = cubin.function_name;
  // As the CUDA recorder does: the demangled name names template instances for tune.yaml.
  int status = 0;
  if (char* demangled = abi::__cxa_demangle(kernel.name.c_str(), nullptr, nullptr, &status)) {
    if (status == 0 && kernel.name != demangled) kernel.demangled_name = demangled;
    std::free(demangled);
  }
  kernel.images[std::string(capture::kImageSource)] = content(spec.source);
  kernel.images[std::string(capture::kImagePtx)] = content(ptx.image);
  kernel.images[std::string(capture::kImageCubin)] = content(cubin.image);
  kernel.params = params;
  std::size_t id = writer.add_kernel(kernel);
  capture::Launch launch;
  launch.grid = spec.grid;
  launch.block = spec.block;
  launch.shared_memory_bytes = spec.shared_bytes;
  launch.args = args;
  for (std::size_t i = 0; i < spec.buffers.size(); ++i) {
    capture::Region region;
    region.name = spec.buffers[i].name;
    region.address = addresses[i];
    region.size = before[i].size();
    region.element_type = spec.buffers[i].type;
    region.content = writer.put_content(before[i]);
    launch.prologue.push_back(region);
    if (after[i] != before[i]) {
      region.content = writer.put_content(after[i]);
      launch.epilogue.push_back(region);
    }
  }
  for (const Global& g : globals) {
    capture::Region region;
    region.name = g.name;
    region.kind = capture::RegionKind::global;
    region.address = g.address;
    region.size = g.before.size();
    region.content = writer.put_content(g.before);
    launch.globals.push_back(region);
    if (g.after != g.before) {
      region.content = writer.put_content(g.after);
      launch.epilogue.push_back(region);
    }
  }
  for (int i = 0; i < spec.launches; ++i) {
    launch.sequence = static_cast<std::uint64_t>(i);
    writer.add_launch(id, launch);
  }
  writer.close();
  return kernel.name;
}

const char* const kBenchStencil = R"(
#ifndef SCALE
#define SCALE 1.0f
#endif
__global__ void stencil2d(const float* in, float* out, int n, float alpha) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= n - 1 || y >= n - 1) return;
  int i = y * n + x;
  out[i] = SCALE * (in[i] + alpha * (in[i - n] + in[i + n] + in[i - 1] + in[i + 1] - 4.0f * in[i]));
}
)";

CudaLaunchSpec stencil_launch(int n) {
  CudaLaunchSpec spec;
  spec.source = kBenchStencil;
  spec.entry = "stencil2d";
  spec.grid = {static_cast<std::uint32_t>(n / 16), static_cast<std::uint32_t>(n / 16), 1};
  spec.block = {16, 16, 1};
  std::vector<float> in(std::size_t(n) * n), out(std::size_t(n) * n, 0.0f);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = std::sin(0.001f * float(i % 100000));
  spec.buffers.push_back({"in", bytes_of(in), capture::ElementType::f32, {}});
  spec.buffers.push_back({"out", bytes_of(out), capture::ElementType::f32, {}});
  spec.args = {pointer_arg(0), pointer_arg(1), value_arg(n), value_arg(0.1f)};
  return spec;
}

}  // namespace r3::test
