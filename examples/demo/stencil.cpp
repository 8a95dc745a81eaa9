// The default demo's kernel: one explicit (Jacobi) step of the 2D heat equation on an n x n grid
// (five-point stencil; the boundary rows and columns stay fixed), returning how much the grid
// changed, which the application uses as its convergence test.
extern "C" void stencil2d(const float* in, float* out, int n, float alpha, double* change) {
  double sum = 0;
  for (int y = 1; y < n - 1; ++y) {
    for (int x = 1; x < n - 1; ++x) {
      int i = y * n + x;
      float next = in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i]);
      out[i] = next;
      sum += next > in[i] ? next - in[i] : in[i] - next;
    }
  }
  *change = sum;
}
