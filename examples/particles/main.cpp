// Particles in a rotating force field; the push (particles.cpp) is called through the r3 capture
// API. The kernel's source is included rather than linked so that the application and the
// recorded source share one definition of the struct without a header the replay would need.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "particles.cpp"
#include "r3/record/call.hpp"

int main(int argc, char** argv) {
  const int count = argc > 1 ? std::atoi(argv[1]) : 100000;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  const int grid = 64;
  if (count < 1 || steps < 1) {
    std::fprintf(stderr, "usage: %s [PARTICLES >= 1] [STEPS >= 1]\n", argv[0]);
    return 2;
  }
  std::vector<float> x(count), y(count), vx(count, 0.0f), vy(count, 0.0f);
  for (int i = 0; i < count; ++i) {
    x[i] = static_cast<float>((i * 7919) % (grid * 100)) / 100.0f;
    y[i] = static_cast<float>((i * 104729) % (grid * 100)) / 100.0f;
  }
  std::vector<float> fx(grid * grid), fy(grid * grid);
  for (int cy = 0; cy < grid; ++cy) {
    for (int cx = 0; cx < grid; ++cx) {
      fx[cy * grid + cx] = -(cy - grid / 2) * 0.01f;
      fy[cy * grid + cx] = (cx - grid / 2) * 0.01f;
    }
  }
  const float* field[2] = {fx.data(), fy.data()};
  Particles p{x.data(), y.data(), vx.data(), vy.data(), field, count, grid};
  const float dt = 0.1f;
  for (int step = 0; step < steps; ++step) {
    r3::record::call(
        "push_particles",
        [&](r3::record::Call& c) {
          c.source(R3_KERNEL_SOURCE).arg(p).arg(dt);
          c.region("x", x.data(), x.size()).region("y", y.data(), y.size());
          c.region("vx", vx.data(), vx.size()).region("vy", vy.data(), vy.size());
          c.region("fx", fx.data(), fx.size()).region("fy", fy.data(), fy.size());
          c.region("field", field, sizeof field, r3::capture::ElementType::u64);
        },
        [&] { push_particles(p, dt); });
  }
  double energy = 0;
  for (int i = 0; i < count; ++i) energy += 0.5 * (vx[i] * vx[i] + vy[i] * vy[i]);
  std::printf("particles: %d particles, %d steps, kinetic energy %.4f\n", count, steps, energy);
  return 0;
}
