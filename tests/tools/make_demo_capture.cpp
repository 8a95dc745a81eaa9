// Writes a capture of the default demo's kernel (examples/demo/stencil.cpp) by calling it on a
// grid with a hot spot: `steps` launches that alternate the two buffers, each launch's prologue
// (both buffers before the call) and epilogue (the buffer it wrote). Used by the tests and by
// the README's main-job command until `r3 record` can record the demo application itself.
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "r3/capture.hpp"
#include "r3/error.hpp"

#include R3_DEMO_KERNEL_SOURCE

namespace {

using namespace r3::capture;

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

DeviceInfo this_host() {
  DeviceInfo device;
  device.backend = "host";
  device.name = cpu_model();
  utsname machine{};
  uname(&machine);
  device.architecture = machine.machine;
  device.multiprocessor_count = static_cast<int>(std::thread::hardware_concurrency());
  device.memory_bytes = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                        static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  return device;
}

std::span<const std::byte> bytes_of(const std::vector<float>& v) {
  return std::as_bytes(std::span<const float>(v));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::cerr << "usage: " << argv[0] << " OUTPUT.h5 [N [STEPS]]\n"
              << "Writes a capture of STEPS (default 3) launches of the demo stencil on an N x N "
                 "grid (default 512).\n";
    return argc < 2 ? 2 : 0;
  }
  const int n = argc > 2 ? std::atoi(argv[2]) : 512;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 3;
  if (n < 3 || steps < 1) {
    std::cerr << "N must be at least 3 and STEPS at least 1\n";
    return 2;
  }
  const float alpha = 0.2f;
  std::vector<float> a(static_cast<std::size_t>(n) * n, 0.0f), b(a.size(), 0.0f);
  for (int y = n / 4; y < n / 2; ++y) {
    for (int x = n / 4; x < n / 2; ++x) a[static_cast<std::size_t>(y) * n + x] = 100.0f;
  }

  try {
    CaptureInfo info;
    info.device = this_host();
    std::ostringstream command;
    for (int i = 0; i < argc; ++i) command << (i ? " " : "") << argv[i];
    info.command_line = command.str();
    CaptureWriter writer = CaptureWriter::create(argv[1], info);

    std::ifstream source_file(R3_DEMO_KERNEL_SOURCE_PATH, std::ios::binary);
    std::string source((std::istreambuf_iterator<char>(source_file)), {});
    Kernel kernel;
    kernel.name = "stencil2d";
    kernel.images[std::string(kImageSource)] = writer.put_content(std::as_bytes(std::span(source)));
    kernel.params = {{0, 8, true, "const float*"},
                     {8, 8, true, "float*"},
                     {16, 4, false, "int"},
                     {20, 4, false, "float"}};
    std::size_t id = writer.add_kernel(kernel);

    std::vector<float>* in = &a;
    std::vector<float>* out = &b;
    const std::uint64_t bytes = a.size() * sizeof(float);
    for (int step = 0; step < steps; ++step) {
      Launch launch;
      launch.sequence = static_cast<std::uint64_t>(step);
      struct {
        const float* in;
        float* out;
        int n;
        float alpha;
      } args{in->data(), out->data(), n, alpha};
      launch.args.resize(sizeof args);
      std::memcpy(launch.args.data(), &args, sizeof args);
      auto region = [&](const char* name, const std::vector<float>& v) {
        return Region{name,  RegionKind::allocation, reinterpret_cast<std::uintptr_t>(v.data()),
                      bytes, ElementType::f32,       writer.put_content(bytes_of(v))};
      };
      launch.prologue = {region("in", *in), region("out", *out)};
      auto start = std::chrono::steady_clock::now();
      stencil2d(in->data(), out->data(), n, alpha);
      launch.app_time_us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count();
      launch.epilogue = {region("out", *out)};
      writer.add_launch(id, launch);
      std::swap(in, out);
    }
    writer.close();
    std::cout << "wrote " << argv[1] << ": " << steps << " launches of stencil2d on a " << n
              << " x " << n << " grid\n";
  } catch (const r3::Error& e) {
    std::cerr << "make_demo_capture: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
