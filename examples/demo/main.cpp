// The default demo's application: explicit heat-equation steps on an n x n grid, the kernel
// (stencil.cpp) called through the r3 capture API so that `r3 record` can capture its launches.
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "r3/record/call.hpp"

extern "C" void stencil2d(const float* in, float* out, int n, float alpha, double* change);

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 512;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  if (n < 3 || steps < 1) {
    std::fprintf(stderr, "usage: %s [N >= 3] [STEPS >= 1]\n", argv[0]);
    return 2;
  }
  const float alpha = 0.2f;
  std::vector<float> a(static_cast<std::size_t>(n) * n, 0.0f), b(a.size(), 0.0f);
  for (int y = n / 4; y < n / 2; ++y) {
    for (int x = n / 4; x < n / 2; ++x) a[static_cast<std::size_t>(y) * n + x] = 100.0f;
  }
  float* in = a.data();
  float* out = b.data();
  double change = 0;
  for (int step = 0; step < steps; ++step) {
    r3::record::call(
        "stencil2d",
        [&](r3::record::Call& c) {
          c.source(R3_KERNEL_SOURCE).arg(in).arg(out).arg(n).arg(alpha).arg(&change);
          c.region("in", in, a.size()).region("out", out, a.size()).region("change", &change, 1);
        },
        [&] { stencil2d(in, out, n, alpha, &change); });
    std::swap(in, out);
  }
  double heat = 0;
  for (std::size_t i = 0; i < a.size(); ++i) heat += in[i];
  std::printf("stencil: %d steps on %d x %d, total heat %.3f, last change %.6g\n", steps, n, n,
              heat, change);
  return 0;
}
