// y = A x for a dense row-major m x n matrix with a scale applied per row; one row per thread.
extern "C" __global__ void matvec(int m, int n, const float* a, const float* x, const float* scale,
                                  float* y) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m) return;
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) sum += a[row * n + j] * x[j] * scale[row];
  y[row] = sum;
}
