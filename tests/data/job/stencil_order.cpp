// The demo stencil with its loop order as a tunable: ORDER 1 (the default) walks the grid
// column by column, which strides through memory; ORDER 0 walks it row by row. A tuning run must
// find ORDER 0 and report it as a speedup.
#ifndef R3_TUNABLE
#define R3_TUNABLE(...)
#endif
R3_TUNABLE(ORDER, 1, 0 1)
#ifndef ORDER
#define ORDER 1
#endif

extern "C" void stencil2d(const float* in, float* out, int n, float alpha, double* change) {
  double sum = 0;
#if ORDER == 0
  for (int y = 1; y < n - 1; ++y) {
    for (int x = 1; x < n - 1; ++x) {
#else
  for (int x = 1; x < n - 1; ++x) {
    for (int y = 1; y < n - 1; ++y) {
#endif
      int i = y * n + x;
      out[i] = in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i]);
      sum += out[i] > in[i] ? out[i] - in[i] : in[i] - out[i];
    }
  }
  *change = sum;
}
