// A wrong variant of examples/demo/stencil.cpp: the northern neighbour is read one cell too far
// to the right (i - n + 1 instead of i - n).
extern "C" void stencil2d(const float* in, float* out, int n, float alpha, double* change) {
  double sum = 0;
  for (int y = 1; y < n - 1; ++y) {
    for (int x = 1; x < n - 1; ++x) {
      int i = y * n + x;
      out[i] = in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n + 1] + in[i + n] - 4.0f * in[i]);
      sum += out[i] > in[i] ? out[i] - in[i] : in[i] - out[i];
    }
  }
  *change = sum;
}
