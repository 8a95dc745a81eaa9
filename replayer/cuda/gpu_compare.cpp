#include "gpu_compare.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>

#include "driver.hpp"
#include "nvrtc_compiler.hpp"

namespace r3::replay::cuda {
namespace {

const char* kSource = R"(
struct Half { unsigned short bits; };
struct BFloat { unsigned short bits; };
struct Byte { unsigned char bits; };

__device__ double as_number(Half h) {
  unsigned int sign = (h.bits & 0x8000u) << 16, exponent = (h.bits >> 10) & 0x1fu, mantissa = h.bits & 0x3ffu;
  unsigned int bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) { mantissa <<= 1; --exponent; }
      bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return (double)__uint_as_float(bits);
}
__device__ double as_number(BFloat b) { return (double)__uint_as_float((unsigned int)b.bits << 16); }
__device__ double as_number(Byte) { return 0; }
template <class T> __device__ double as_number(T v) { return (double)v; }

template <class T> __device__ bool same_bits(const T& a, const T& b) {
  const unsigned char* x = (const unsigned char*)&a;
  const unsigned char* y = (const unsigned char*)&b;
  for (int i = 0; i < (int)sizeof(T); ++i) if (x[i] != y[i]) return false;
  return true;
}

// out[0]: elements out of tolerance; out[1]: bits of the largest error (a non-negative double,
// so its bits order as integers); out[2]: first bad index (~0 when none); with `before` (else
// null), out[3]: elements the recorded launch changed, out[4]: of those, left as they were.
template <class T>
__device__ void compare(const T* actual, const T* expected, const T* before,
                        unsigned long long count, int tolerant, double rtol, double atol,
                        unsigned long long* out) {
  unsigned long long bad = 0, first = ~0ull, changed = 0, left = 0;
  double worst = 0;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    T a = actual[i], e = expected[i];
    if (before) {
      T b = before[i];
      if (!same_bits(e, b)) {
        ++changed;
        if (same_bits(a, b)) ++left;
      }
    }
    if (same_bits(a, e)) continue;
    double x = as_number(a), ref = as_number(e), error = fabs(x - ref);
    bool wrong = true;
    if (isnan(x) || isnan(ref)) {
      wrong = !(isnan(x) && isnan(ref));
      error = wrong ? __longlong_as_double(0x7ff0000000000000ll) : 0;
    } else if (tolerant) {
      wrong = !(error <= atol + rtol * fabs(ref));
    }
    worst = fmax(worst, error);
    if (wrong) { ++bad; if (i < first) first = i; }
  }
  // Reduced over the warp first: the atomics on five words, one per thread, serialised in L2
  // and cost more than the comparison (a region of 16 MiB: 1.7 ms, where reading it takes 10 us).
  for (int offset = 16; offset > 0; offset /= 2) {
    bad += __shfl_down_sync(0xffffffffu, bad, offset);
    changed += __shfl_down_sync(0xffffffffu, changed, offset);
    left += __shfl_down_sync(0xffffffffu, left, offset);
    first = min(first, __shfl_down_sync(0xffffffffu, first, offset));
    worst = fmax(worst, __shfl_down_sync(0xffffffffu, worst, offset));
  }
  if ((threadIdx.x & 31) != 0) return;
  if (bad) { atomicAdd(&out[0], bad); atomicMin(&out[2], first); }
  if (changed) atomicAdd(&out[3], changed);
  if (left) atomicAdd(&out[4], left);
  if (worst > 0) atomicMax(&out[1], (unsigned long long)__double_as_longlong(worst));
}

#define R3_COMPARE(NAME, T)                                                                 \
  extern "C" __global__ void r3_compare_##NAME(const T* a, const T* e, const T* b,         \
                                               unsigned long long n, int tolerant,            \
                                               double rtol, double atol,                      \
                                               unsigned long long* out) {                     \
    compare<T>(a, e, b, n, tolerant, rtol, atol, out);                                        \
  }
R3_COMPARE(unknown, Byte) R3_COMPARE(u8, unsigned char) R3_COMPARE(i8, signed char)
R3_COMPARE(u16, unsigned short) R3_COMPARE(i16, short) R3_COMPARE(u32, unsigned int)
R3_COMPARE(i32, int) R3_COMPARE(u64, unsigned long long) R3_COMPARE(i64, long long)
R3_COMPARE(f16, Half) R3_COMPARE(bf16, BFloat) R3_COMPARE(f32, float) R3_COMPARE(f64, double)

// A keyed hash of `size` bytes (8-aligned): every 8-byte word mixed with the key and its place,
// summed into out[0]. The key is r3's secret, passed only as this kernel's argument. Summed
// over the block before the one atomic: one per thread took 1.7 ms for 16 MiB on an H100, and
// r3 hashes every reference copy after each candidate. (blockDim.x: a multiple of 32, <= 1024.)
__device__ unsigned long long r3_mix(unsigned long long z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
extern "C" __global__ void r3_keyed_hash(const unsigned char* bytes, unsigned long long size,
                                         unsigned long long key, unsigned long long* out) {
  const unsigned long long words = size / 8;
  const unsigned long long* word = (const unsigned long long*)bytes;
  unsigned long long sum = 0;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < words;
       i += (unsigned long long)gridDim.x * blockDim.x)
    sum += r3_mix(word[i] ^ r3_mix(i ^ key));
  if (blockIdx.x == 0 && threadIdx.x == 0 && words * 8 < size) {
    unsigned long long tail = 0;
    for (unsigned long long at = words * 8; at < size; ++at)
      tail |= (unsigned long long)bytes[at] << (8 * (at - words * 8));
    sum += r3_mix(tail ^ r3_mix(words ^ key ^ size));
  }
  __shared__ unsigned long long warps[32];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if ((threadIdx.x & 31) == 0) warps[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x >= 32) return;
  sum = threadIdx.x < blockDim.x / 32 ? warps[threadIdx.x] : 0;
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (threadIdx.x == 0) atomicAdd(out, sum);
}
)";

}  // namespace

const std::string& compare_kernels_source() {
  static const std::string source = kSource;
  return source;
}

GpuCompare::~GpuCompare() {
  // A lost context took its resources with it.
  if (module_ && !Device::instance().lost()) {
    driver().cuModuleUnload(module_);
    driver().cuMemFree(result_);
    if (hashes_) driver().cuMemFree(hashes_);
  }
}

void GpuCompare::load() {
  if (module_) return;
  static std::mutex mutex;
  static std::string cubin;
  static std::string error;
  {
    std::lock_guard lock(mutex);
    if (cubin.empty() && error.empty()) {
      NvrtcOutput out = compile_nvrtc("r3_compare.cu", compare_kernels_source(), "", {}, {}, {},
                                      Device::instance().compute_capability());
      if (out.ok)
        cubin = out.image;
      else
        error = out.log;
    }
  }
  if (!error.empty()) throw Error("the GPU comparison kernels do not compile: " + error);
  const Driver& d = driver();
  R3_CU(d.cuModuleLoadDataEx(&module_, cubin.data(), 0, nullptr, nullptr));
  for (capture::ElementType type : capture::kAllElementTypes) {
    std::string name = "r3_compare_" + std::string(capture::to_string(type));
    R3_CU(
        d.cuModuleGetFunction(&functions_[static_cast<std::size_t>(type)], module_, name.c_str()));
  }
  R3_CU(d.cuModuleGetFunction(&keyed_hash_, module_, "r3_keyed_hash"));
  R3_CU(d.cuMemAlloc(&result_, kResultWords * sizeof(std::uint64_t)));
}

std::uint64_t GpuCompare::keyed_hash(CUdeviceptr bytes, std::uint64_t size, CUstream stream) {
  const Buffer one{bytes, size};
  return keyed_hashes(std::span(&one, 1), stream).front();
}

std::vector<std::uint64_t> GpuCompare::keyed_hashes(std::span<const Buffer> buffers,
                                                    CUstream stream) {
  std::vector<std::uint64_t> sums(buffers.size(), 0);
  if (buffers.empty()) return sums;
  load();
  const Driver& d = driver();
  if (hash_words_ < buffers.size()) {
    if (hashes_) R3_CU(d.cuMemFree(hashes_));
    hashes_ = 0;
    hash_words_ = 0;
    R3_CU(d.cuMemAlloc(&hashes_, buffers.size() * sizeof(std::uint64_t)));
    hash_words_ = buffers.size();
  }
  R3_CU(d.cuMemsetD8Async(hashes_, 0, buffers.size() * sizeof(std::uint64_t), stream));
  std::uint64_t key = key_;
  const unsigned threads = 256;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    CUdeviceptr bytes = buffers[i].bytes;
    std::uint64_t size = buffers[i].size;
    CUdeviceptr result = hashes_ + i * sizeof(std::uint64_t);
    void* params[] = {&bytes, &size, &key, &result};
    const std::uint64_t wanted = (size / 8 + threads - 1) / threads;
    const unsigned blocks = static_cast<unsigned>(wanted == 0 ? 1 : wanted < 4096 ? wanted : 4096);
    R3_CU(d.cuLaunchKernel(keyed_hash_, blocks, 1, 1, threads, 1, 1, 0, stream, params, nullptr));
  }
  R3_CU(d.cuMemcpyDtoHAsync(sums.data(), hashes_, sums.size() * sizeof(std::uint64_t), stream));
  R3_CU(d.cuStreamSynchronize(stream));
  return sums;
}

void GpuCompare::compare(CUdeviceptr actual, CUdeviceptr expected, CUdeviceptr before,
                         std::uint64_t count, capture::ElementType type,
                         const replay::Tolerance& tolerance, CUstream stream, RegionCheck& check) {
  if (count == 0) return;
  load();
  const Driver& d = driver();
  CUfunction function = functions_[static_cast<std::size_t>(type)];
  std::uint64_t initial[5] = {0, 0, ~std::uint64_t{0}, 0, 0};
  R3_CU(d.cuStreamSynchronize(stream));
  R3_CU(d.cuMemcpyHtoD(result_, initial, sizeof initial));
  int tolerant = capture::is_floating_point(type) && !tolerance.bitwise ? 1 : 0;
  double rtol = tolerance.rtol, atol = tolerance.atol;
  void* params[] = {&actual, &expected, &before, &count, &tolerant, &rtol, &atol, &result_};
  const unsigned threads = 256;
  const std::uint64_t wanted = (count + threads - 1) / threads;
  const unsigned blocks = static_cast<unsigned>(wanted < 4096 ? wanted : 4096);
  R3_CU(d.cuLaunchKernel(function, blocks, 1, 1, threads, 1, 1, 0, stream, params, nullptr));
  R3_CU(d.cuStreamSynchronize(stream));
  std::uint64_t result[5];
  R3_CU(d.cuMemcpyDtoH(result, result_, sizeof result));
  check.mismatches += result[0];
  check.changed += result[3];
  check.left_unchanged += result[4];
  double worst;
  std::memcpy(&worst, &result[1], sizeof worst);
  check.max_error = std::max(check.max_error, worst);
  if (result[2] != ~std::uint64_t{0} &&
      (check.first_bad_index < 0 || static_cast<std::int64_t>(result[2]) < check.first_bad_index))
    check.first_bad_index = static_cast<std::int64_t>(result[2]);
}

}  // namespace r3::replay::cuda
