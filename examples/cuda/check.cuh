// CHECK(call): the CUDA runtime call must succeed, else the example prints the call and CUDA's
// message and exits 1. Shared by the examples' host code (not by their *_kernels.cuh).
#pragma once

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                    \
  do {                                                                 \
    cudaError_t e_ = (call);                                           \
    if (e_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)
