// gpu_sweep: measures every configuration of a GPU kernel's tuning space, for the tables of
// bench/data. Each configuration is compiled with NVRTC (on every CPU core), run on the GPU with
// its result checked, and timed with CUDA events (median of 10 runs after 2 warm-up runs;
// 3 runs for configurations slower than 20 ms). Configurations that do not compile, do not
// launch (too many threads, too much shared memory, too many registers) or compute a wrong
// result are recorded as `fail`.
//
// Usage: gpu_sweep matmul|stencil OUTPUT.csv [LIMIT]   (LIMIT: only the first LIMIT points)
#include <cuda.h>
#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

#define CHECK_CU(call)                                                           \
  do {                                                                           \
    CUresult status_ = (call);                                                   \
    if (status_ != CUDA_SUCCESS) {                                               \
      const char* name_ = nullptr;                                               \
      cuGetErrorName(status_, &name_);                                           \
      std::fprintf(stderr, "%s failed: %s (line %d)\n", #call, name_, __LINE__); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

using Point = std::vector<std::pair<std::string, int>>;  // parameter name -> value

// The tiled matrix multiply C = A B (N x N, row major): a BM x BN tile of C per block, BK wide
// slices of A and B through shared memory (PAD words of padding per row), TM x TN results per
// thread, the inner k loop unrolled UNROLL times.
const char* kMatmul = R"(
extern "C" __global__ void kernel(const float* __restrict__ A, const float* __restrict__ B,
                                  float* __restrict__ C, int N) {
  constexpr int THREADS = (BM / TM) * (BN / TN);
  __shared__ float As[BK][BM + PAD];
  __shared__ float Bs[BK][BN + PAD];
  const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN];
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < N; k0 += BK) {
    for (int i = threadIdx.x; i < BM * BK; i += THREADS) {
      int r = i / BK, c = i % BK;
      As[c][r] = A[(row0 + r) * N + k0 + c];
    }
    for (int i = threadIdx.x; i < BK * BN; i += THREADS) {
      int r = i / BN, c = i % BN;
      Bs[r][c] = B[(k0 + r) * N + col0 + c];
    }
    __syncthreads();
#pragma unroll UNROLL
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
      for (int i = 0; i < TM; ++i) a[i] = As[k][ty * TM + i];
      for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx * TN + j];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) C[(row0 + ty * TM + i) * N + col0 + tx * TN + j] = acc[i][j];
}
)";

// A radius-2 star stencil on an N x N grid (interior points only): BX x BY threads per block,
// CY points per thread in y (the loop over them unrolled UNROLL times), reading through a
// shared-memory tile with halo (SMEM=1) or straight from global memory, with __ldg (LDG=1).
const char* kStencil = R"(
#if LDG
#define LOAD(p) __ldg(p)
#else
#define LOAD(p) (*(p))
#endif
extern "C" __global__ void kernel(const float* __restrict__ in, float* __restrict__ out, int N) {
  const float c0 = -0.5f, c1 = 0.1f, c2 = 0.025f;
  const int x = blockIdx.x * BX + threadIdx.x;
  const int y0 = (blockIdx.y * BY + threadIdx.y) * CY;
#if SMEM
  __shared__ float tile[BY * CY + 4][BX + 4];
  const int tile_y0 = blockIdx.y * BY * CY - 2, tile_x0 = blockIdx.x * BX - 2;
  for (int ty = threadIdx.y; ty < BY * CY + 4; ty += BY) {
    for (int tx = threadIdx.x; tx < BX + 4; tx += BX) {
      int gy = tile_y0 + ty, gx = tile_x0 + tx;
      tile[ty][tx] = (gy >= 0 && gy < N && gx >= 0 && gx < N) ? LOAD(&in[gy * N + gx]) : 0.0f;
    }
  }
  __syncthreads();
#endif
  if (x < 2 || x >= N - 2) return;
#pragma unroll UNROLL
  for (int c = 0; c < CY; ++c) {
    const int y = y0 + c;
    if (y < 2 || y >= N - 2) continue;
#if SMEM
    const int ly = threadIdx.y * CY + c + 2, lx = threadIdx.x + 2;
    float v = c0 * tile[ly][lx] + c1 * (tile[ly][lx - 1] + tile[ly][lx + 1] + tile[ly - 1][lx] + tile[ly + 1][lx]) +
              c2 * (tile[ly][lx - 2] + tile[ly][lx + 2] + tile[ly - 2][lx] + tile[ly + 2][lx]);
#else
    const float* p = in + y * N + x;
    float v = c0 * LOAD(p) + c1 * (LOAD(p - 1) + LOAD(p + 1) + LOAD(p - N) + LOAD(p + N)) +
              c2 * (LOAD(p - 2) + LOAD(p + 2) + LOAD(p - 2 * N) + LOAD(p + 2 * N));
#endif
    out[y * N + x] = v;
  }
}
)";

struct Sweep {
  std::string name;
  const char* source;
  std::vector<std::pair<std::string, std::vector<int>>> parameters;
};

std::vector<Point> all_points(const Sweep& sweep) {
  std::vector<Point> points{Point{}};
  for (const auto& [name, values] : sweep.parameters) {
    std::vector<Point> extended;
    for (const Point& p : points) {
      for (int v : values) {
        Point q = p;
        q.emplace_back(name, v);
        extended.push_back(std::move(q));
      }
    }
    points = std::move(extended);
  }
  return points;
}

int get(const Point& p, const std::string& name) {
  for (const auto& [n, v] : p) {
    if (n == name) return v;
  }
  std::fprintf(stderr, "no parameter %s\n", name.c_str());
  std::exit(1);
}

struct Compiled {
  std::vector<char> cubin;
  std::string error;
};

Compiled compile(const Sweep& sweep, const Point& p, const std::string& arch) {
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, sweep.source, "kernel.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS) {
    return Compiled{{}, "nvrtcCreateProgram failed"};
  }
  std::vector<std::string> options = {"-arch=" + arch, "-std=c++17"};
  for (const auto& [name, value] : p) options.push_back("-D" + name + "=" + std::to_string(value));
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  Compiled out;
  nvrtcResult result = nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  if (result != NVRTC_SUCCESS) {
    out.error = std::string(nvrtcGetErrorString(result)) + "\n";
    std::size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, log.data());
    out.error += log;
  } else {
    std::size_t size = 0;
    nvrtcGetCUBINSize(program, &size);
    out.cubin.resize(size);
    nvrtcGetCUBIN(program, out.cubin.data());
  }
  nvrtcDestroyProgram(&program);
  return out;
}

struct Launch {
  unsigned grid[3], block[3];
  std::vector<void*> args;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s matmul|stencil OUTPUT.csv [LIMIT]\n", argv[0]);
    return 2;
  }
  const std::string which = argv[1];
  const std::size_t limit = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : SIZE_MAX;
  Sweep sweep;
  if (which == "matmul") {
    sweep = {"matmul",
             kMatmul,
             {{"BM", {16, 32, 64, 128}},
              {"BN", {16, 32, 64, 128}},
              {"BK", {8, 16, 32}},
              {"TM", {1, 2, 4, 8}},
              {"TN", {1, 2, 4, 8}},
              {"UNROLL", {1, 4}},
              {"PAD", {0, 1}}}};
  } else if (which == "stencil") {
    sweep = {"stencil",
             kStencil,
             {{"BX", {8, 16, 32, 64, 128, 256}},
              {"BY", {1, 2, 4, 8, 16, 32}},
              {"CY", {1, 2, 4, 8, 16}},
              {"UNROLL", {1, 2, 4}},
              {"SMEM", {0, 1}},
              {"LDG", {0, 1}}}};
  } else {
    std::fprintf(stderr, "unknown sweep '%s'\n", which.c_str());
    return 2;
  }
  std::vector<Point> points = all_points(sweep);
  if (points.size() > limit) points.resize(limit);

  CHECK_CU(cuInit(0));
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 0));
  char device_name[256];
  CHECK_CU(cuDeviceGetName(device_name, sizeof device_name, device));
  int major = 0, minor = 0;
  CHECK_CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  CHECK_CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  const std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  CUcontext context;
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  CHECK_CU(cuCtxSetCurrent(context));

  // Compile every point on every core.
  auto start = std::chrono::steady_clock::now();
  std::vector<Compiled> compiled(points.size());
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t) {
    workers.emplace_back([&] {
      for (std::size_t i; (i = next++) < points.size();)
        compiled[i] = compile(sweep, points[i], arch);
    });
  }
  for (auto& w : workers) w.join();
  const double compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int nvrtc_major = 0, nvrtc_minor = 0;
  nvrtcVersion(&nvrtc_major, &nvrtc_minor);
  std::fprintf(stderr, "NVRTC %d.%d, %s\n", nvrtc_major, nvrtc_minor, arch.c_str());
  for (const Compiled& c : compiled) {
    if (c.cubin.empty()) {  // show one compiler message, so that a broken setup is obvious
      std::fprintf(stderr, "first compile error:\n%s\n", c.error.c_str());
      break;
    }
  }

  // Data and a reference result.
  const int n = which == "matmul" ? 2048 : 8192;
  const std::size_t elements = static_cast<std::size_t>(n) * n;
  std::vector<float> a(elements), b(elements);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (auto& v : a) v = uniform(rng);
  for (auto& v : b) v = uniform(rng);
  CUdeviceptr da, db, dc;
  CHECK_CU(cuMemAlloc(&da, elements * 4));
  CHECK_CU(cuMemAlloc(&db, elements * 4));
  CHECK_CU(cuMemAlloc(&dc, elements * 4));
  CHECK_CU(cuMemcpyHtoD(da, a.data(), elements * 4));
  CHECK_CU(cuMemcpyHtoD(db, b.data(), elements * 4));
  // Checked entries, computed on the CPU.
  std::vector<std::pair<std::size_t, double>> checks;
  for (int k = 0; k < 256; ++k) {
    int row = 2 + static_cast<int>(rng() % (n - 4)), col = 2 + static_cast<int>(rng() % (n - 4));
    double expected = 0;
    if (which == "matmul") {
      for (int i = 0; i < n; ++i)
        expected += double(a[std::size_t(row) * n + i]) * b[std::size_t(i) * n + col];
    } else {
      auto at = [&](int y, int x) { return double(a[std::size_t(y) * n + x]); };
      expected =
          -0.5 * at(row, col) +
          0.1 * (at(row, col - 1) + at(row, col + 1) + at(row - 1, col) + at(row + 1, col)) +
          0.025 * (at(row, col - 2) + at(row, col + 2) + at(row - 2, col) + at(row + 2, col));
    }
    checks.emplace_back(std::size_t(row) * n + col, expected);
  }

  CUevent begin, end;
  CHECK_CU(cuEventCreate(&begin, CU_EVENT_DEFAULT));
  CHECK_CU(cuEventCreate(&end, CU_EVENT_DEFAULT));
  std::ofstream out(argv[2]);
  out << "# " << sweep.name << " on " << device_name << " (" << arch << "), N = " << n
      << "; time in ms, median of 10 runs after 2 warm-up runs (3 runs above 20 ms); fail: did "
         "not compile, launch or verify\n";
  for (std::size_t k = 0; k < sweep.parameters.size(); ++k) out << sweep.parameters[k].first << ",";
  out << "time\n";
  std::map<std::string, int> failures;
  std::vector<float> result(elements);
  int done = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    for (const auto& [name, value] : p) out << value << ",";
    if (i % 500 == 0) {
      std::fprintf(stderr, "%s: point %zu of %zu\n", sweep.name.c_str(), i, points.size());
    }
    auto fail = [&](const std::string& why) {
      out << "fail\n" << std::flush;
      ++failures[why];
    };
    if (compiled[i].cubin.empty()) {
      fail("compile");
      continue;
    }
    CUmodule module;
    if (cuModuleLoadData(&module, compiled[i].cubin.data()) != CUDA_SUCCESS) {
      fail("load");
      continue;
    }
    CUfunction function;
    CHECK_CU(cuModuleGetFunction(&function, module, "kernel"));
    unsigned grid[3], block[3];
    if (which == "matmul") {
      block[0] =
          static_cast<unsigned>((get(p, "BM") / get(p, "TM")) * (get(p, "BN") / get(p, "TN")));
      block[1] = block[2] = 1;
      grid[0] = static_cast<unsigned>(n / get(p, "BN"));
      grid[1] = static_cast<unsigned>(n / get(p, "BM"));
      grid[2] = 1;
    } else {
      block[0] = static_cast<unsigned>(get(p, "BX"));
      block[1] = static_cast<unsigned>(get(p, "BY"));
      block[2] = 1;
      grid[0] = static_cast<unsigned>((n + get(p, "BX") - 1) / get(p, "BX"));
      const int rows_per_block = get(p, "BY") * get(p, "CY");
      grid[1] = static_cast<unsigned>((n + rows_per_block - 1) / rows_per_block);
      grid[2] = 1;
    }
    int size = n;
    void* args[] = {&da, &db, &dc, &size};
    void* stencil_args[] = {&da, &dc, &size};
    void** kernel_args = which == "matmul" ? args : stencil_args;
    CHECK_CU(cuMemsetD32(dc, 0, elements));
    auto launch = [&] {
      return cuLaunchKernel(function, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0,
                            nullptr, kernel_args, nullptr);
    };
    if (launch() != CUDA_SUCCESS) {
      cuCtxSynchronize();
      cuModuleUnload(module);
      fail("launch");
      continue;
    }
    if (cuCtxSynchronize() != CUDA_SUCCESS) {
      std::fprintf(stderr, "a kernel faulted; the context is lost: stopping at point %zu\n", i);
      return 1;
    }
    CHECK_CU(cuMemcpyDtoH(result.data(), dc, elements * 4));
    bool right = true;
    for (const auto& [index, expected] : checks) {
      if (std::fabs(result[index] - expected) > 1e-3 * (1 + std::fabs(expected))) right = false;
    }
    if (!right) {
      cuModuleUnload(module);
      fail("wrong result");
      continue;
    }
    CHECK_CU(launch());  // second warm-up
    CHECK_CU(cuEventRecord(begin, nullptr));
    CHECK_CU(launch());
    CHECK_CU(cuEventRecord(end, nullptr));
    CHECK_CU(cuEventSynchronize(end));
    float first_ms = 0;
    CHECK_CU(cuEventElapsedTime(&first_ms, begin, end));
    const int repeats = first_ms > 20 ? 3 : 10;
    std::vector<float> times{first_ms};
    for (int r = 1; r < repeats; ++r) {
      CHECK_CU(cuEventRecord(begin, nullptr));
      CHECK_CU(launch());
      CHECK_CU(cuEventRecord(end, nullptr));
      CHECK_CU(cuEventSynchronize(end));
      float ms = 0;
      CHECK_CU(cuEventElapsedTime(&ms, begin, end));
      times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    char text[32];
    std::snprintf(text, sizeof text, "%.5f", times[times.size() / 2]);
    out << text << "\n" << std::flush;
    cuModuleUnload(module);
    ++done;
  }
  std::fprintf(stderr, "%s: %zu points, %d measured; compile %.1f s on %u threads;",
               sweep.name.c_str(), points.size(), done, compile_seconds,
               std::thread::hardware_concurrency());
  for (const auto& [why, count] : failures) std::fprintf(stderr, " %s: %d", why.c_str(), count);
  std::fprintf(stderr, "\n");
  return 0;
}
