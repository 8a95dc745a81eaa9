#include "svg.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace r3::report::svg {

std::string escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string number(double value, int digits) {
  std::ostringstream out;
  out.precision(digits);
  out << value;
  return out.str();
}

namespace {

constexpr double kWidth = 640, kHeight = 300;
constexpr double kLeft = 70, kRight = 20, kTop = 30, kBottom = 45;

std::string header(const Axes& axes, double height = kHeight) {
  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << kWidth << ' ' << height
      << "\" width=\"" << kWidth << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\"><title>" << escape(axes.title)
      << "</title>"
      << "<text x=\"" << kWidth / 2 << "\" y=\"16\" text-anchor=\"middle\" font-size=\"13\">"
      << escape(axes.title) << "</text>";
  return out.str();
}

// Round tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int want = 5) {
  if (!(hi > lo)) return {lo};
  double step = std::pow(10.0, std::floor(std::log10((hi - lo) / want)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if ((hi - lo) / (step * m) <= want) {
      step *= m;
      break;
    }
  }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + 1e-9 * step; t += step) out.push_back(t);
  return out;
}

}  // namespace

std::string line_chart(const Axes& axes, const std::vector<Series>& series) {
  double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  bool first = true;
  for (const Series& s : series) {
    for (auto [x, y] : s.points) {
      if (axes.log_y && y <= 0) continue;
      double v = axes.log_y ? std::log10(y) : y;
      if (first) {
        x0 = x1 = x;
        y0 = y1 = v;
        first = false;
      }
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, v), y1 = std::max(y1, v);
    }
  }
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y0 -= 0.5, y1 += 0.5;
  double pad = 0.05 * (y1 - y0);
  y0 -= pad, y1 += pad;
  if (!axes.log_y) x0 = std::min(x0, 0.0);
  const double w = kWidth - kLeft - kRight, h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * w; };
  auto py = [&](double v) { return kTop + (1 - (v - y0) / (y1 - y0)) * h; };
  std::ostringstream out;
  out << header(axes);
  out << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << w << "\" height=\"" << h
      << "\" fill=\"none\" stroke=\"#999\"/>";
  for (double t : ticks(x0, x1)) {
    out << "<text x=\"" << px(t) << "\" y=\"" << kTop + h + 14 << "\" text-anchor=\"middle\">"
        << number(t) << "</text>";
  }
  if (axes.log_y) {
    for (double e = std::floor(y0); e <= y1; e += 1) {
      for (double m : {1.0, 2.0, 5.0}) {
        double v = e + std::log10(m);
        if (v < y0 || v > y1) continue;
        out << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + w << "\" y1=\"" << py(v)
            << "\" y2=\"" << py(v) << "\" stroke=\"#eee\"/><text x=\"" << kLeft - 4 << "\" y=\""
            << py(v) + 4 << "\" text-anchor=\"end\">" << number(std::pow(10.0, v)) << "</text>";
      }
    }
  } else {
    for (double t : ticks(y0, y1)) {
      out << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + w << "\" y1=\"" << py(t) << "\" y2=\""
          << py(t) << "\" stroke=\"#eee\"/><text x=\"" << kLeft - 4 << "\" y=\"" << py(t) + 4
          << "\" text-anchor=\"end\">" << number(t) << "</text>";
    }
  }
  out << "<text x=\"" << kLeft + w / 2 << "\" y=\"" << kHeight - 8 << "\" text-anchor=\"middle\">"
      << escape(axes.x_label) << "</text><text transform=\"translate(14," << kTop + h / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape(axes.y_label) << "</text>";
  double legend_y = kTop + 14;
  for (const Series& s : series) {
    std::ostringstream path;
    bool started = false;
    double last_y = 0;
    for (auto [x, y] : s.points) {
      if (axes.log_y && y <= 0) continue;
      double v = py(axes.log_y ? std::log10(y) : y);
      if (!started) {
        path << 'M' << px(x) << ',' << v;
        started = true;
      } else {
        if (s.steps) path << " L" << px(x) << ',' << last_y;
        path << " L" << px(x) << ',' << v;
      }
      last_y = v;
    }
    if (!started) continue;
    out << "<path d=\"" << path.str() << "\" fill=\"none\" stroke=\"" << s.colour
        << "\" stroke-width=\"2\"/>";
    out << "<text x=\"" << kLeft + w - 6 << "\" y=\"" << legend_y
        << "\" text-anchor=\"end\" fill=\"" << s.colour << "\">" << escape(s.label) << "</text>";
    legend_y += 14;
  }
  out << "</svg>";
  return out.str();
}

std::string bar_chart(const Axes& axes, const std::vector<Bar>& bars, double reference) {
  const double row = 26;
  const double height = kTop + kBottom + row * std::max<std::size_t>(bars.size(), 1);
  const double left = 190, w = kWidth - left - 90;
  double top = reference;
  for (const Bar& b : bars) top = std::max({top, b.value, b.high});
  if (top <= 0) top = 1;
  top *= 1.05;
  auto px = [&](double v) { return left + v / top * w; };
  std::ostringstream out;
  out << header(axes, height);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    double y = kTop + row * i + 4;
    out << "<text x=\"" << left - 6 << "\" y=\"" << y + 13 << "\" text-anchor=\"end\">"
        << escape(b.label) << "</text><rect x=\"" << left << "\" y=\"" << y << "\" width=\""
        << std::max(0.0, px(b.value) - left) << "\" height=\"18\" fill=\"#4e79a7\"/>";
    if (b.high > b.low) {
      out << "<line x1=\"" << px(b.low) << "\" x2=\"" << px(b.high) << "\" y1=\"" << y + 9
          << "\" y2=\"" << y + 9 << "\" stroke=\"#222\" stroke-width=\"1.5\"/>"
          << "<line x1=\"" << px(b.low) << "\" x2=\"" << px(b.low) << "\" y1=\"" << y + 3
          << "\" y2=\"" << y + 15 << "\" stroke=\"#222\"/><line x1=\"" << px(b.high) << "\" x2=\""
          << px(b.high) << "\" y1=\"" << y + 3 << "\" y2=\"" << y + 15 << "\" stroke=\"#222\"/>";
    }
    out << "<text x=\"" << px(std::max(b.value, b.high)) + 6 << "\" y=\"" << y + 13 << "\">"
        << escape(b.note) << "</text>";
  }
  if (reference > 0) {
    out << "<line x1=\"" << px(reference) << "\" x2=\"" << px(reference) << "\" y1=\"" << kTop
        << "\" y2=\"" << height - kBottom + 4 << "\" stroke=\"#c00\" stroke-dasharray=\"4 3\"/>"
        << "<text x=\"" << px(reference) << "\" y=\"" << height - kBottom + 16
        << "\" text-anchor=\"middle\" fill=\"#c00\">" << number(reference) << "</text>";
  }
  out << "<text x=\"" << left + w / 2 << "\" y=\"" << height - 8 << "\" text-anchor=\"middle\">"
      << escape(axes.x_label) << "</text></svg>";
  return out.str();
}

std::string stacked_columns(const Axes& axes, const std::vector<std::string>& categories,
                            const std::vector<std::string>& colours,
                            const std::vector<Stack>& stacks) {
  double top = 1;
  for (const Stack& s : stacks) {
    double sum = 0;
    for (double h : s.heights) sum += h;
    top = std::max(top, sum);
  }
  const double w = kWidth - kLeft - kRight - 110, h = kHeight - kTop - kBottom;
  const double slot = w / std::max<std::size_t>(stacks.size(), 1);
  auto py = [&](double v) { return kTop + (1 - v / top) * h; };
  std::ostringstream out;
  out << header(axes);
  for (double t : ticks(0, top)) {
    out << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + w << "\" y1=\"" << py(t) << "\" y2=\""
        << py(t) << "\" stroke=\"#eee\"/><text x=\"" << kLeft - 4 << "\" y=\"" << py(t) + 4
        << "\" text-anchor=\"end\">" << number(t) << "</text>";
  }
  std::size_t label_every = std::max<std::size_t>(1, stacks.size() / 12);
  for (std::size_t i = 0; i < stacks.size(); ++i) {
    double base = 0, x = kLeft + slot * i + slot * 0.1;
    for (std::size_t c = 0; c < stacks[i].heights.size() && c < colours.size(); ++c) {
      double v = stacks[i].heights[c];
      if (v <= 0) continue;
      out << "<rect x=\"" << x << "\" y=\"" << py(base + v) << "\" width=\"" << slot * 0.8
          << "\" height=\"" << py(base) - py(base + v) << "\" fill=\"" << colours[c] << "\"/>";
      base += v;
    }
    if (i % label_every == 0) {
      out << "<text x=\"" << x + slot * 0.4 << "\" y=\"" << kTop + h + 14
          << "\" text-anchor=\"middle\">" << escape(stacks[i].label) << "</text>";
    }
  }
  for (std::size_t c = 0; c < categories.size() && c < colours.size(); ++c) {
    double y = kTop + 14 * c + 8;
    out << "<rect x=\"" << kLeft + w + 10 << "\" y=\"" << y - 8 << "\" width=\"10\" height=\"10\""
        << " fill=\"" << colours[c] << "\"/><text x=\"" << kLeft + w + 24 << "\" y=\"" << y + 1
        << "\">" << escape(categories[c]) << "</text>";
  }
  out << "<text x=\"" << kLeft + w / 2 << "\" y=\"" << kHeight - 8 << "\" text-anchor=\"middle\">"
      << escape(axes.x_label) << "</text><text transform=\"translate(14," << kTop + h / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape(axes.y_label) << "</text></svg>";
  return out.str();
}

}  // namespace r3::report::svg
