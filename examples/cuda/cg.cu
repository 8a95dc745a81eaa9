// A conjugate-gradient solver for the 2D Poisson equation (5-point Laplacian in CSR form) built
// with plain nvcc (static CUDA runtime), for recording with `r3 record -- cuda_cg N ITERATIONS`.
// Its hot kernel is the CSR sparse matrix-vector product (cg_kernels.cuh).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cg_kernels.cuh"
#include "check.cuh"

namespace {

constexpr int kThreads = 256, kDotBlocks = 264;

struct Csr {
  std::vector<int> row_start, columns;
  std::vector<double> values;
};

// The 5-point Laplacian on an n x n grid with Dirichlet boundaries (symmetric positive definite).
Csr laplacian(int n) {
  Csr a;
  a.row_start.push_back(0);
  for (int y = 0; y < n; ++y) {
    for (int x = 0; x < n; ++x) {
      auto add = [&](int column, double value) {
        a.columns.push_back(column);
        a.values.push_back(value);
      };
      const int row = y * n + x;
      if (y > 0) add(row - n, -1.0);
      if (x > 0) add(row - 1, -1.0);
      add(row, 4.0);
      if (x < n - 1) add(row + 1, -1.0);
      if (y < n - 1) add(row + n, -1.0);
      a.row_start.push_back(static_cast<int>(a.columns.size()));
    }
  }
  return a;
}

template <typename T>
T* to_device(const std::vector<T>& host) {
  T* device = nullptr;
  CHECK(cudaMalloc(&device, host.size() * sizeof(T)));
  CHECK(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return device;
}

double dot(int rows, const double* a, const double* b, double* partial) {
  dot_partial<<<kDotBlocks, kThreads>>>(rows, a, b, partial);
  std::vector<double> sums(kDotBlocks);
  CHECK(cudaMemcpy(sums.data(), partial, sums.size() * sizeof(double), cudaMemcpyDeviceToHost));
  double total = 0;
  for (double s : sums) total += s;
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 256;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 100;
  if (n < 2 || iterations < 1) {
    std::fprintf(stderr, "usage: cuda_cg [N >= 2 [ITERATIONS >= 1]]\n");
    return 2;
  }
  const int rows = n * n;
  const Csr a = laplacian(n);
  int* row_start = to_device(a.row_start);
  int* columns = to_device(a.columns);
  double* values = to_device(a.values);
  // b = 1 everywhere, x0 = 0, so r = p = b.
  std::vector<double> ones(rows, 1.0), zeros(rows, 0.0);
  double* x = to_device(zeros);
  double* r = to_device(ones);
  double* p = to_device(ones);
  // A = A p lives in the stream-ordered pool (cudaMallocAsync), as in applications that use it.
  double* ap = nullptr;
  CHECK(cudaMallocAsync(&ap, rows * sizeof(double), nullptr));
  CHECK(cudaMemsetAsync(ap, 0, rows * sizeof(double), nullptr));
  double* partial = to_device(std::vector<double>(kDotBlocks, 0.0));
  const int blocks = (rows + kThreads - 1) / kThreads;

  double rr = dot(rows, r, r, partial);
  const double rr0 = rr;
  int done = 0;
  for (; done < iterations && rr > 1e-20 * rr0; ++done) {
    csr_spmv<<<blocks, kThreads>>>(rows, row_start, columns, values, p, ap);
    const double alpha = rr / dot(rows, p, ap, partial);
    axpy<<<blocks, kThreads>>>(rows, alpha, p, x);
    axpy<<<blocks, kThreads>>>(rows, -alpha, ap, r);
    const double rr_next = dot(rows, r, r, partial);
    xpby<<<blocks, kThreads>>>(rows, r, rr_next / rr, p);
    CHECK(cudaGetLastError());
    rr = rr_next;
  }
  std::printf("cg on %d x %d: %d iterations, relative residual %.3e\n", n, n, done,
              std::sqrt(rr / rr0));
  CHECK(cudaFreeAsync(ap, nullptr));
  for (void* d : {(void*)row_start, (void*)columns, (void*)values, (void*)x, (void*)r, (void*)p,
                  (void*)partial})
    CHECK(cudaFree(d));
  return 0;
}
