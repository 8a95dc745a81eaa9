// The demo stencil with a tunable MODE whose values 6, 7 and 8 (a third of them) crash, hang
// and compute a wrong result: a tuning run must classify each and finish. MODE 9 (set by tests
// only) also scribbles over its input, which the next candidate must not see.
#ifndef R3_TUNABLE
#define R3_TUNABLE(...)
#endif
R3_TUNABLE(MODE, 0, 0 1 2 3 4 5 6 7 8)
#ifndef MODE
#define MODE 0
#endif

extern "C" void stencil2d(const float* in, float* out, int n, float alpha, double* change) {
  double sum = 0;
#if MODE == 6
  *static_cast<volatile int*>(nullptr) = 1;  // crash
#elif MODE == 7
  for (volatile int spin = 0;; spin = spin + 1) {  // hang
  }
#elif MODE == 9
  for (int i = 0; i < n * n; i += 7) const_cast<float*>(in)[i] = 42.0f;  // changes its input
#endif
  for (int y = 1; y < n - 1; ++y) {
    for (int x = 1; x < n - 1; ++x) {
      int i = y * n + x;
      float value = in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i]);
#if MODE == 8
      value += 1.0f;  // wrong
#endif
      out[i] = value;
      sum += out[i] > in[i] ? out[i] - in[i] : in[i] - out[i];
    }
  }
  *change = sum;
}
