// A Kokkos heat-equation solver whose kernels expose tunable values through Kokkos' tuning
// interface, as libraries such as Kokkos Kernels do: r3's connector (`r3 apply`) hands it the
// values of a tuning run's result, with no change to this code.
//
//   heat::step      an MDRangePolicy stencil; its tile is asked for under the names Kokkos'
//                   own MDRange tuner uses ("heat::step_tile_size_0", "..._1")
//   heat::residual  a reduction whose chunk size is the application's own variable
//                   ("chunk_size"), asked for in a context that names the kernel
//
// Usage: kokkos_heat [N [STEPS]]. Prints the values each kernel ran with, the time of the steps
// and the residual.
#include <Kokkos_Core.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace tools = Kokkos::Tools::Experimental;

namespace {

// An integer tuning variable with the allowed values `choices`.
std::size_t declare_choice(const std::string& name, std::vector<int64_t>& choices) {
  tools::VariableInfo info;
  info.type = tools::ValueType::kokkos_value_int64;
  info.category = tools::StatisticalCategory::kokkos_value_ordinal;
  info.valueQuantity = tools::CandidateValueType::kokkos_value_set;
  info.candidates = tools::make_candidate_set(choices.size(), choices.data());
  return tools::declare_output_type(name, info);
}

std::size_t declare_kernel_name_input() {
  tools::VariableInfo info;
  info.type = tools::ValueType::kokkos_value_string;
  info.category = tools::StatisticalCategory::kokkos_value_categorical;
  info.valueQuantity = tools::CandidateValueType::kokkos_value_unbounded;
  return tools::declare_input_type("kokkos.kernel_name", info);
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  int status = 0;
  {
    const int n = argc > 1 ? std::atoi(argv[1]) : 256;
    const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
    if (n < 3 || steps < 1) {
      std::fprintf(stderr, "usage: kokkos_heat [N >= 3 [STEPS >= 1]]\n");
      status = 2;
    } else {
      std::vector<int64_t> tiles = {1, 2, 4, 8, 16, 32, 64};
      std::vector<int64_t> chunks = {1, 16, 64, 256, 1024};
      const std::size_t tile_x = declare_choice("heat::step_tile_size_0", tiles);
      const std::size_t tile_y = declare_choice("heat::step_tile_size_1", tiles);
      const std::size_t chunk = declare_choice("chunk_size", chunks);
      const std::size_t kernel_name = declare_kernel_name_input();

      Kokkos::View<double**> u("u", n, n), v("v", n, n);
      Kokkos::parallel_for(
          "heat::init", Kokkos::MDRangePolicy<Kokkos::Rank<2>>({0, 0}, {n, n}),
          KOKKOS_LAMBDA(int i, int j) {
            const bool hot = i > n / 4 && i < 3 * n / 4 && j > n / 4 && j < 3 * n / 4;
            u(i, j) = v(i, j) = hot ? 1.0 : 0.0;
          });

      // The tile of the stencil: the application's default is 8 x 8.
      const std::size_t step_context = tools::get_new_context_id();
      tools::begin_context(step_context);
      tools::VariableValue tile[2] = {tools::make_variable_value(tile_x, int64_t(8)),
                                      tools::make_variable_value(tile_y, int64_t(8))};
      tools::request_output_values(step_context, 2, tile);
      const int tx = int(tile[0].value.int_value), ty = int(tile[1].value.int_value);
      std::printf("heat::step tile %d x %d\n", tx, ty);
      // The stencil's own time, fenced launch by launch (the copy after it is not tuned): what a
      // tuned tile changes, without start-up, copies and I/O.
      double stencil_seconds = 0;
      for (int s = 0; s < steps; ++s) {
        Kokkos::fence();
        Kokkos::Timer timer;
        Kokkos::parallel_for(
            "heat::step", Kokkos::MDRangePolicy<Kokkos::Rank<2>>({1, 1}, {n - 1, n - 1}, {tx, ty}),
            KOKKOS_LAMBDA(int i, int j) {
              v(i, j) = u(i, j) + 0.2 * (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1) -
                                         4.0 * u(i, j));
            });
        Kokkos::fence();
        stencil_seconds += timer.seconds();
        Kokkos::deep_copy(u, v);
      }
      std::printf("heat::step: %d steps in %.3f ms\n", steps, stencil_seconds * 1e3);
      tools::end_context(step_context);

      // The chunk size of the reduction, in a context that names its kernel: default 1.
      const std::size_t residual_context = tools::get_new_context_id();
      tools::begin_context(residual_context);
      tools::VariableValue name = tools::make_variable_value(kernel_name, "heat::residual");
      tools::set_input_values(residual_context, 1, &name);
      tools::VariableValue chunk_value = tools::make_variable_value(chunk, int64_t(1));
      tools::request_output_values(residual_context, 1, &chunk_value);
      const int chunk_size = int(chunk_value.value.int_value);
      std::printf("heat::residual chunk_size %d\n", chunk_size);
      double sum = 0.0;
      Kokkos::parallel_reduce(
          "heat::residual", Kokkos::RangePolicy<>(0, n * n).set_chunk_size(chunk_size),
          KOKKOS_LAMBDA(int k, double& acc) { acc += u(k / n, k % n); }, sum);
      tools::end_context(residual_context);
      std::printf("heat after %d steps on %d x %d: total heat %.12f\n", steps, n, n, sum);
    }
  }
  Kokkos::finalize();
  return status;
}
