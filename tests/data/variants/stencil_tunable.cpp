// A correct variant of examples/demo/stencil.cpp whose inner loop is unrolled by a factor that
// must be given at compile time (-D UNROLL=4).
#ifndef UNROLL
#error "compile with -D UNROLL=<factor>"
#endif
extern "C" void stencil2d(const float* in, float* out, int n, float alpha, double* change) {
  double sum = 0;
  for (int y = 1; y < n - 1; ++y) {
#pragma clang loop unroll_count(UNROLL)
    for (int x = 1; x < n - 1; ++x) {
      int i = y * n + x;
      out[i] = in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i]);
      sum += out[i] > in[i] ? out[i] - in[i] : in[i] - out[i];
    }
  }
  *change = sum;
}
