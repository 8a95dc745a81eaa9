// y = A x with A in CSR form, one row per thread.
extern "C" __global__ void spmv_csr(int rows, const int* row_offsets, const int* columns,
                                    const double* values, const double* x, double* y) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  double sum = 0.0;
  for (int k = row_offsets[row]; k < row_offsets[row + 1]; ++k) sum += values[k] * x[columns[k]];
  y[row] = sum;
}
