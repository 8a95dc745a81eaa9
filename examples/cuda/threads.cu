// cuda_threads THREADS MIB [SECONDS]: a CUDA application whose threads launch kernels at the
// same time (bench/record_overhead; tests/gpu records it). One thread launches `scale` once over
// MIB MiB (the launch `r3 record -k scale` records: its memory copied before and after, written to
// the capture); the other THREADS-1 threads each launch `tick` on a stream of their own, as fast as
// they can, for SECONDS (default 2) and at least until `scale` has returned. It prints how long
// the workers' launch calls took (the longest, and the median) and how long `scale`'s launch call
// took: a worker that waits for the recording of another thread's launch shows it in its
// longest call.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

__global__ void scale(float* data, size_t n, float factor) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    data[i] *= factor;
}

__global__ void tick(unsigned* counter) { atomicAdd(counter, 1u); }

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "cuda_threads: %s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: cuda_threads THREADS MIB [SECONDS]\n");
    return 2;
  }
  const int threads = std::max(2, std::atoi(argv[1]));
  const size_t elements = size_t(std::max(1, std::atoi(argv[2]))) << 18;  // MiB of floats
  const double run_for = argc > 3 ? std::atof(argv[3]) : 2.0;

  float* data = nullptr;
  check(cudaMalloc(&data, elements * sizeof(float)), "cudaMalloc");
  check(cudaMemset(data, 0, elements * sizeof(float)), "cudaMemset");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  std::atomic<bool> scale_done{false};
  std::atomic<int> ready{0};
  std::vector<std::vector<double>> calls(threads - 1);
  std::vector<std::thread> workers;
  for (int w = 0; w < threads - 1; ++w) {
    workers.emplace_back([&, w] {
      cudaStream_t stream;
      unsigned* counter = nullptr;
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      check(cudaMalloc(&counter, sizeof(unsigned)), "cudaMalloc");
      tick<<<1, 32, 0, stream>>>(counter);  // the module loaded before timing starts
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      ++ready;
      const auto start = Clock::now();
      for (long i = 0; seconds(Clock::now() - start) < run_for || !scale_done; ++i) {
        const auto before = Clock::now();
        tick<<<1, 32, 0, stream>>>(counter);
        calls[w].push_back(seconds(Clock::now() - before));
        if (i % 64 == 63) check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      }
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      check(cudaFree(counter), "cudaFree");
      check(cudaStreamDestroy(stream), "cudaStreamDestroy");
    });
  }
  while (ready < threads - 1) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the workers under way
  const auto before = Clock::now();
  scale<<<1024, 256>>>(data, elements, 2.0f);
  const double scale_call = seconds(Clock::now() - before);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  scale_done = true;
  for (std::thread& t : workers) t.join();

  std::vector<double> all;
  for (const auto& c : calls) all.insert(all.end(), c.begin(), c.end());
  std::sort(all.begin(), all.end());
  std::printf(
      "threads %d, scale over %zu MiB: workers' launch calls %zu, longest %.3f ms, median %.2f us; "
      "scale's launch call %.3f ms\n",
      threads, elements >> 18, all.size(), 1e3 * all.back(), 1e6 * all[all.size() / 2],
      1e3 * scale_call);
  check(cudaFree(data), "cudaFree");
  return 0;
}
