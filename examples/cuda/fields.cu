// An advection step built with plain nvcc (static CUDA runtime) whose kernels reach memory
// through a struct of device pointers passed by value, a pointer table in device memory and
// module globals (fields_kernels.cuh), for recording with `r3 record -- cuda_fields N STEPS`.
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "check.cuh"
#include "fields_kernels.cuh"

namespace {

constexpr int kSpecies = 4;

float* device_array(int cells, float first, float step) {
  std::vector<float> host(cells);
  for (int i = 0; i < cells; ++i) host[i] = first + step * float(i % 97);
  float* device = nullptr;
  CHECK(cudaMalloc(&device, cells * sizeof(float)));
  CHECK(cudaMemcpy(device, host.data(), cells * sizeof(float), cudaMemcpyHostToDevice));
  return device;
}

double device_sum(const float* device, int cells) {
  std::vector<float> host(cells);
  CHECK(cudaMemcpy(host.data(), device, cells * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (float v : host) sum += v;
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  const int cells = argc > 1 ? std::atoi(argv[1]) : 1 << 20;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  if (cells < 2 || steps < 1) {
    std::fprintf(stderr, "usage: cuda_fields [CELLS >= 2 [STEPS >= 1]]\n");
    return 2;
  }
  const float weights[3] = {0.25f, 0.5f, 0.25f};
  CHECK(cudaMemcpyToSymbol(upwind_weights, weights, sizeof weights));

  Fields f{device_array(cells, 1.0f, 0.01f), device_array(cells, 0.5f, 0.001f),
           device_array(cells, 0.0f, 0.0f), cells};

  // The species and the table of their pointers, both in device memory.
  std::vector<float*> species;
  for (int s = 0; s < kSpecies; ++s) species.push_back(device_array(cells, float(s), 0.002f));
  float** species_table = nullptr;
  CHECK(cudaMalloc(&species_table, kSpecies * sizeof(float*)));
  CHECK(
      cudaMemcpy(species_table, species.data(), kSpecies * sizeof(float*), cudaMemcpyHostToDevice));
  const std::vector<float> mix = {0.1f, 0.2f, 0.3f, 0.4f};
  float* mix_weights = nullptr;
  CHECK(cudaMalloc(&mix_weights, kSpecies * sizeof(float)));
  CHECK(cudaMemcpy(mix_weights, mix.data(), kSpecies * sizeof(float), cudaMemcpyHostToDevice));
  float* mixed = device_array(cells, 0.0f, 0.0f);

  float* tracer[2] = {device_array(cells, 2.0f, 0.0f), device_array(cells, 0.0f, 0.0f)};

  const int threads = 256, blocks = (cells + threads - 1) / threads;
  for (int s = 0; s < steps; ++s) {
    compute_flux<<<blocks, threads>>>(f);
    mix_species<<<blocks, threads>>>(species_table, kSpecies, mix_weights, cells, mixed);
    CHECK(cudaMemcpyToSymbol(tracers, tracer, sizeof tracer));
    decay<<<blocks, threads>>>(cells, 0.99f);
    CHECK(cudaGetLastError());
    std::swap(tracer[0], tracer[1]);
  }
  unsigned long long counted = 0;
  CHECK(cudaMemcpyFromSymbol(&counted, decayed_cells, sizeof counted));
  std::printf(
      "fields after %d steps of %d cells: flux %.6f, mixed %.6f, tracer %.6f, %llu "
      "cells decayed\n",
      steps, cells, device_sum(f.flux, cells), device_sum(mixed, cells),
      device_sum(tracer[0], cells), counted);
  for (float* p : {const_cast<float*>(f.density), const_cast<float*>(f.velocity), f.flux, mixed,
                   mix_weights, tracer[0], tracer[1]})
    CHECK(cudaFree(p));
  for (float* p : species) CHECK(cudaFree(p));
  CHECK(cudaFree(species_table));
  return 0;
}
