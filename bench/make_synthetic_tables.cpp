// Writes the synthetic tables of bench/data: test functions of optimisation discretised on
// grids, time = f(x) - f_min + 1 (positive, the optimum near 1).
//   branin.csv       2 parameters, 40 x 40 points on [-5, 10] x [0, 15]
//   hartmann6.csv    6 parameters, 6 points each on [0, 1]
//   rosenbrock4.csv  4 parameters, 9 points each on [-2, 2]
// Usage: make_synthetic_tables DIRECTORY
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

double branin(const std::vector<double>& x) {
  const double a = 1, b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, r = 6, s = 10, t = 1 / (8 * M_PI);
  const double u = x[1] - b * x[0] * x[0] + c * x[0] - r;
  return a * u * u + s * (1 - t) * std::cos(x[0]) + s;
}

double hartmann6(const std::vector<double>& x) {
  const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
  const double A[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                          {0.05, 10, 17, 0.1, 8, 14},
                          {3, 3.5, 1.7, 10, 17, 8},
                          {17, 8, 0.05, 10, 0.1, 14}};
  const double P[4][6] = {{1312, 1696, 5569, 124, 8283, 5886},
                          {2329, 4135, 8307, 3736, 1004, 9991},
                          {2348, 1451, 3522, 2883, 3047, 6650},
                          {4047, 8828, 8732, 5743, 1091, 381}};
  double total = 0;
  for (int i = 0; i < 4; ++i) {
    double inner = 0;
    for (int j = 0; j < 6; ++j)
      inner += A[i][j] * (x[j] - 1e-4 * P[i][j]) * (x[j] - 1e-4 * P[i][j]);
    total += alpha[i] * std::exp(-inner);
  }
  return -total;
}

double rosenbrock(const std::vector<double>& x) {
  double total = 0;
  for (std::size_t i = 0; i + 1 < x.size(); ++i) {
    total += 100 * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i]);
  }
  return total;
}

std::vector<double> grid(double low, double high, int points) {
  std::vector<double> values;
  for (int i = 0; i < points; ++i) values.push_back(low + (high - low) * i / (points - 1));
  return values;
}

void write(const std::string& path, const std::vector<std::vector<double>>& axes,
           const std::function<double(const std::vector<double>&)>& f, double minimum,
           const std::string& note) {
  std::ofstream out(path);
  out << "# " << note << "\n# time = f(x) - f_min + 1, f_min = " << minimum << "\n";
  for (std::size_t d = 0; d < axes.size(); ++d) out << "x" << d + 1 << ",";
  out << "time\n";
  std::vector<std::size_t> index(axes.size(), 0);
  std::vector<double> x(axes.size());
  char number[64];
  while (true) {
    for (std::size_t d = 0; d < axes.size(); ++d) {
      x[d] = axes[d][index[d]];
      std::snprintf(number, sizeof number, "%.6g", x[d]);
      out << number << ",";
    }
    std::snprintf(number, sizeof number, "%.8g", f(x) - minimum + 1);
    out << number << "\n";
    std::size_t d = 0;
    while (d < axes.size() && ++index[d] == axes[d].size()) index[d++] = 0;
    if (d == axes.size()) break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIRECTORY\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  write(dir + "/branin.csv", {grid(-5, 10, 40), grid(0, 15, 40)}, branin, 0.397887,
        "Branin on a 40 x 40 grid over [-5, 10] x [0, 15]");
  write(dir + "/hartmann6.csv", std::vector<std::vector<double>>(6, grid(0, 1, 6)), hartmann6,
        -3.32237, "Hartmann-6 on a 6^6 grid over [0, 1]^6");
  write(dir + "/rosenbrock4.csv", std::vector<std::vector<double>>(4, grid(-2, 2, 9)), rosenbrock,
        0.0, "Rosenbrock in 4 dimensions on a 9^4 grid over [-2, 2]^4");
  return 0;
}
