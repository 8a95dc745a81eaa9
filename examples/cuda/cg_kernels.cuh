// The kernels of cg.cu, in a file of their own so that r3 can compile variants of them with
// NVRTC (tune-cg.yaml). Grid-stride loops: any launch shape computes the same result.
#pragma once

// y = A x for A in CSR form (one thread per row).
__global__ void csr_spmv(int rows, const int* __restrict__ row_start,
                         const int* __restrict__ columns, const double* __restrict__ values,
                         const double* __restrict__ x, double* __restrict__ y) {
  for (int row = blockIdx.x * blockDim.x + threadIdx.x; row < rows; row += gridDim.x * blockDim.x) {
    double sum = 0.0;
    for (int k = row_start[row]; k < row_start[row + 1]; ++k) sum += values[k] * x[columns[k]];
    y[row] = sum;
  }
}

// partial[b] = the part of a . b that block b summed (the host adds the partials). Works for
// any block size up to 1024.
__global__ void dot_partial(int n, const double* __restrict__ a, const double* __restrict__ b,
                            double* __restrict__ partial) {
  __shared__ double sums[1024];
  double s = 0.0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    s += a[i] * b[i];
  sums[threadIdx.x] = s;
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    if (threadIdx.x % (2 * stride) == 0 && threadIdx.x + stride < blockDim.x)
      sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

// y += alpha x
__global__ void axpy(int n, double alpha, const double* __restrict__ x, double* __restrict__ y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] += alpha * x[i];
}

// p = r + beta p
__global__ void xpby(int n, const double* __restrict__ r, double beta, double* __restrict__ p) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = r[i] + beta * p[i];
}
