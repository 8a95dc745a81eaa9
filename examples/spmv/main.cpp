// Power iteration with the 2D Laplacian (five-point stencil on a g x g grid) in CSR form; the
// sparse matrix-vector product (spmv.cpp) is called through the r3 capture API.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "r3/record/call.hpp"

extern "C" void spmv_csr(int rows, const int* row_offsets, const int* columns, const double* values,
                         const double* x, double* y);

int main(int argc, char** argv) {
  const int g = argc > 1 ? std::atoi(argv[1]) : 256;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 20;
  if (g < 2 || iterations < 1) {
    std::fprintf(stderr, "usage: %s [GRID >= 2] [ITERATIONS >= 1]\n", argv[0]);
    return 2;
  }
  const int rows = g * g;
  std::vector<int> row_offsets(rows + 1, 0), columns;
  std::vector<double> values;
  for (int y = 0; y < g; ++y) {
    for (int x = 0; x < g; ++x) {
      auto add = [&](int column, double value) {
        columns.push_back(column);
        values.push_back(value);
      };
      if (y > 0) add((y - 1) * g + x, -1.0);
      if (x > 0) add(y * g + x - 1, -1.0);
      add(y * g + x, 4.0);
      if (x < g - 1) add(y * g + x + 1, -1.0);
      if (y < g - 1) add((y + 1) * g + x, -1.0);
      row_offsets[y * g + x + 1] = static_cast<int>(columns.size());
    }
  }
  std::vector<double> x(rows), y(rows);
  for (int i = 0; i < rows; ++i) x[i] = 1.0 + 0.001 * (i % 97);
  double eigenvalue = 0;
  for (int it = 0; it < iterations; ++it) {
    r3::record::call(
        "spmv_csr",
        [&](r3::record::Call& c) {
          c.source(R3_KERNEL_SOURCE);
          c.arg(rows).arg(row_offsets.data()).arg(columns.data()).arg(values.data());
          c.arg(x.data()).arg(y.data());
          c.region("row_offsets", row_offsets.data(), row_offsets.size());
          c.region("columns", columns.data(), columns.size());
          c.region("values", values.data(), values.size());
          c.region("x", x.data(), x.size()).region("y", y.data(), y.size());
        },
        [&] {
          spmv_csr(rows, row_offsets.data(), columns.data(), values.data(), x.data(), y.data());
        });
    double norm = 0;
    for (double v : y) norm += v * v;
    norm = std::sqrt(norm);
    eigenvalue = norm;
    for (int i = 0; i < rows; ++i) x[i] = y[i] / norm;
  }
  std::printf("spmv: %d x %d Laplacian (%zu nonzeros), largest eigenvalue estimate %.6f\n", rows,
              rows, values.size(), eigenvalue);
  return 0;
}
