// Kokkos kernels whose launch parameters Kokkos itself leaves to a tool, on any backend:
//
//   policies::matvec   a TeamPolicy with Kokkos::AUTO team size and vector length: one team per
//                      row of a dense matrix, the row's dot product split over the team's threads
//                      and vector lanes
//   policies::stencil  a 3-D MDRangePolicy without a tile: a 7-point Jacobi sweep
//
// Run with --kokkos-tune-internals (or KOKKOS_TUNE_INTERNALS=1) and a tuning tool, Kokkos asks
// the tool for the team size and vector length of the first and the tile of the second (its
// MDRange and team-size tuners); otherwise it chooses them itself.
//
// Usage: kokkos_policies [N [ITERATIONS]]. Prints a checksum of each kernel's result, and the
// time of the matvec launches.
#include <Kokkos_Core.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  int status = 0;
  {
    const int n = argc > 1 ? std::atoi(argv[1]) : 64;
    const int iterations = argc > 2 ? std::atoi(argv[2]) : 10;
    if (n < 4 || iterations < 1) {
      std::fprintf(stderr, "usage: kokkos_policies [N >= 4 [ITERATIONS >= 1]]\n");
      status = 2;
    } else {
      // policies::matvec: y = A x with A (n*n) x (n*n)/8, deterministic values.
      const int rows = n * n, columns = n * n / 8;
      Kokkos::View<double**, Kokkos::LayoutRight> a("a", rows, columns);
      Kokkos::View<double*> x("x", columns), y("y", rows);
      Kokkos::parallel_for(
          "policies::fill", Kokkos::RangePolicy<>(0, rows), KOKKOS_LAMBDA(int i) {
            for (int j = 0; j < columns; ++j) a(i, j) = ((i * 7 + j * 3) % 11) * 0.125;
            if (i < columns) x(i) = (i % 5) * 0.25 + 1.0;
          });
      using Team = Kokkos::TeamPolicy<>::member_type;
      // The matvec launches' own time, fenced: what `r3 apply` changes (bench/app_speedup.py).
      Kokkos::fence();
      const auto start = std::chrono::steady_clock::now();
      for (int it = 0; it < iterations; ++it) {
        Kokkos::parallel_for(
            "policies::matvec", Kokkos::TeamPolicy<>(rows, Kokkos::AUTO, Kokkos::AUTO),
            KOKKOS_LAMBDA(const Team& team) {
              const int i = team.league_rank();
              double sum = 0;
              Kokkos::parallel_reduce(
                  Kokkos::TeamThreadRange(team, columns),
                  [&](int j, double& partial) { partial += a(i, j) * x(j); }, sum);
              Kokkos::single(Kokkos::PerTeam(team), [&] { y(i) = sum; });
            });
      }
      Kokkos::fence();
      const std::chrono::duration<double, std::milli> took =
          std::chrono::steady_clock::now() - start;
      std::printf("policies::matvec: %d launches in %.3f ms\n", iterations, took.count());
      double matvec = 0;
      Kokkos::parallel_reduce(
          "policies::sum_y", Kokkos::RangePolicy<>(0, rows),
          KOKKOS_LAMBDA(int i, double& acc) { acc += y(i); }, matvec);
      std::printf("policies::matvec on %d x %d: checksum %.12e\n", rows, columns, matvec);

      // policies::stencil: a Jacobi sweep on an n^3 grid, u and v swapped each iteration.
      Kokkos::View<double***> u("u", n, n, n), v("v", n, n, n);
      Kokkos::parallel_for(
          "policies::init", Kokkos::MDRangePolicy<Kokkos::Rank<3>>({0, 0, 0}, {n, n, n}),
          KOKKOS_LAMBDA(int i, int j, int k) {
            u(i, j, k) = v(i, j, k) = ((i + 2 * j + 3 * k) % 7) * 0.5;
          });
      for (int it = 0; it < iterations; ++it) {
        Kokkos::parallel_for(
            "policies::stencil",
            Kokkos::MDRangePolicy<Kokkos::Rank<3>>({1, 1, 1}, {n - 1, n - 1, n - 1}),
            KOKKOS_LAMBDA(int i, int j, int k) {
              v(i, j, k) = (u(i - 1, j, k) + u(i + 1, j, k) + u(i, j - 1, k) + u(i, j + 1, k) +
                            u(i, j, k - 1) + u(i, j, k + 1)) /
                           6.0;
            });
        Kokkos::kokkos_swap(u, v);
      }
      double stencil = 0;
      Kokkos::parallel_reduce(
          "policies::sum_u", Kokkos::MDRangePolicy<Kokkos::Rank<3>>({0, 0, 0}, {n, n, n}),
          KOKKOS_LAMBDA(int i, int j, int k, double& acc) { acc += u(i, j, k) * (1 + i % 3); },
          stencil);
      std::printf("policies::stencil on %d^3: checksum %.12e\n", n, stencil);
    }
  }
  Kokkos::finalize();
  return status;
}
