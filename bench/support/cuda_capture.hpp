// Captures of CUDA launches made for the tests and benchmarks: the launch is run on the GPU through
// the driver (code compiled by NVRTC), with its memory read before and after, and written as a
// capture with the source, PTX and cubin images — what the CUDA recorder writes, for a launch the
// test describes. Needs a GPU.
#pragma once

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "r3/capture.hpp"

namespace r3::test {

struct CudaBuffer {
  std::string name;
  std::vector<std::byte> data;  // contents before the launch
  capture::ElementType type = capture::ElementType::unknown;
  // (byte offset, buffer index): the device address of that buffer is written there.
  std::vector<std::pair<std::size_t, std::size_t>> pointers;
};

struct CudaArg {
  std::vector<std::byte> bytes;
  std::size_t alignment = 8;
  std::vector<std::pair<std::size_t, std::size_t>> pointers;  // as in CudaBuffer
  std::string type;
};

template <class T>
CudaArg value_arg(const T& value, std::string type = "") {
  CudaArg arg;
  arg.bytes.resize(sizeof(T));
  std::memcpy(arg.bytes.data(), &value, sizeof(T));
  arg.alignment = alignof(T);
  arg.type = std::move(type);
  return arg;
}
CudaArg pointer_arg(std::size_t buffer);

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

struct CudaLaunchSpec {
  std::string source;
  std::string entry;  // as NVRTC names it (lowered into the recorded kernel name)
  capture::Dim3 grid, block;
  std::uint32_t shared_bytes = 0;
  std::vector<CudaBuffer> buffers;
  std::vector<CudaArg> args;
  int launches = 1;  // recorded launches (the same one repeated)
  // Module globals (__device__ / __constant__ symbols) the launch reads or writes: their initial
  // bytes, written before the launch.
  std::vector<std::pair<std::string, std::vector<std::byte>>> globals;
};

// Runs the launch and writes the capture; returns the recorded (lowered) kernel name.
std::string record_cuda_launch(const std::filesystem::path& path, const CudaLaunchSpec& spec);

// The benchmarks' 2D stencil (`stencil2d(in, out, n, alpha)`, out = SCALE * (in + alpha * the
// Laplacian), SCALE a define that is 1 unless set), and one launch of it over an n x n grid of
// floats (n a multiple of 16) in 16 x 16 blocks, `in` a smooth field.
extern const char* const kBenchStencil;
CudaLaunchSpec stencil_launch(int n);

}  // namespace r3::test
