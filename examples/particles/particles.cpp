// Particles pushed through a force field on a grid. The kernel takes a struct holding pointers
// by value, and reads the field through a table of pointers kept in memory: replaying it at other
// addresses needs pointers rewritten both in its arguments and in memory.
struct Particles {
  float* x;
  float* y;
  float* vx;
  float* vy;
  const float* const* field;  // field[0]: force in x per cell, field[1]: force in y per cell
  int count;
  int grid;  // cells per side; the domain is [0, grid) x [0, grid)
};

extern "C" void push_particles(Particles p, float dt) {
  for (int i = 0; i < p.count; ++i) {
    int cx = static_cast<int>(p.x[i]);
    int cy = static_cast<int>(p.y[i]);
    cx = cx < 0 ? 0 : (cx >= p.grid ? p.grid - 1 : cx);
    cy = cy < 0 ? 0 : (cy >= p.grid ? p.grid - 1 : cy);
    const int cell = cy * p.grid + cx;
    p.vx[i] += dt * p.field[0][cell];
    p.vy[i] += dt * p.field[1][cell];
    float x = p.x[i] + dt * p.vx[i];
    float y = p.y[i] + dt * p.vy[i];
    const float size = static_cast<float>(p.grid);
    if (x < 0) x += size;
    if (x >= size) x -= size;
    if (y < 0) y += size;
    if (y >= size) y -= size;
    p.x[i] = x;
    p.y[i] = y;
  }
}
