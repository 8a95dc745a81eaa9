// Small inline-SVG charts for report.html: no scripts, no external resources.
#pragma once

#include <string>
#include <vector>

namespace r3::report::svg {

struct Series {
  std::string label;
  std::string colour;
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
  bool steps = true;                              // a staircase (running best), else a polyline
};

struct Axes {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_y = false;
};

std::string line_chart(const Axes& axes, const std::vector<Series>& series);

struct Bar {
  std::string label;
  double value = 0;
  double low = 0;  // whisker; equal to value for none
  double high = 0;
  std::string note;  // written at the end of the bar
};
// Horizontal bars; `reference` draws a dashed line (e.g. 1x), 0 for none.
std::string bar_chart(const Axes& axes, const std::vector<Bar>& bars, double reference);

struct Stack {
  std::string label;            // one column (a generation)
  std::vector<double> heights;  // one per category
};
std::string stacked_columns(const Axes& axes, const std::vector<std::string>& categories,
                            const std::vector<std::string>& colours,
                            const std::vector<Stack>& stacks);

std::string escape(std::string_view text);  // for XML/HTML text and attributes
std::string number(double value, int digits = 3);

}  // namespace r3::report::svg
