// The kernels of fields.cu, in a file of their own so that r3 can compile variants of them with
// NVRTC (tune-fields.yaml). They reach their memory the ways applications do besides plain
// pointer arguments: a struct of device pointers passed by value, a table of pointers kept in
// device memory, a pointer table in a module global, __constant__ coefficients and a global
// counter that the kernels update.
#pragma once

// The state of a 1D advection problem, passed by value.
struct Fields {
  const float* density;
  const float* velocity;
  float* flux;
  int cells;
};

// Upwind weights of the flux, set by the host with cudaMemcpyToSymbol.
__constant__ float upwind_weights[3];
// The tracer arrays that `decay` updates, set by the host with cudaMemcpyToSymbol.
__device__ float* tracers[2];
// Cells updated by `decay`, across all its launches.
__device__ unsigned long long decayed_cells;

__global__ void compute_flux(Fields f) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < f.cells; i += gridDim.x * blockDim.x) {
    const float left = i > 0 ? f.density[i - 1] : f.density[i];
    const float right = i + 1 < f.cells ? f.density[i + 1] : f.density[i];
    f.flux[i] = f.velocity[i] * (upwind_weights[0] * left + upwind_weights[1] * f.density[i] +
                                 upwind_weights[2] * right);
  }
}

// out[i] = sum over the species of weight[s] * species[s][i]: the species arrays are reached
// through a table of pointers in device memory.
__global__ void mix_species(const float* const* __restrict__ species, int count,
                            const float* __restrict__ weight, int cells, float* __restrict__ out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < cells; i += gridDim.x * blockDim.x) {
    float sum = 0.0f;
    for (int s = 0; s < count; ++s) sum += weight[s] * species[s][i];
    out[i] = sum;
  }
}

// tracers[1][i] = rate * tracers[0][i]; counts the cells it updated (one global atomic per
// block).
__global__ void decay(int cells, float rate) {
  __shared__ unsigned long long block_cells;
  if (threadIdx.x == 0) block_cells = 0;
  __syncthreads();
  unsigned long long mine = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < cells; i += gridDim.x * blockDim.x) {
    tracers[1][i] = rate * tracers[0][i];
    ++mine;
  }
  atomicAdd(&block_cells, mine);
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(&decayed_cells, block_cells);
}
