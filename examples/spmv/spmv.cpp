// Sparse matrix-vector product y = A x, A in compressed sparse row (CSR) form.
extern "C" void spmv_csr(int rows, const int* row_offsets, const int* columns, const double* values,
                         const double* x, double* y) {
  for (int row = 0; row < rows; ++row) {
    double sum = 0.0;
    for (int k = row_offsets[row]; k < row_offsets[row + 1]; ++k) sum += values[k] * x[columns[k]];
    y[row] = sum;
  }
}
