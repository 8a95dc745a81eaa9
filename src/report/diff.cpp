// Myers' O((N+M)D) shortest edit script over lines, then hunks with three lines of context.
#include "r3/report/diff.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

namespace r3::report {
namespace {

struct Line {
  std::string_view text;
  bool has_newline = true;
};

std::vector<Line> split_lines(std::string_view text) {
  std::vector<Line> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) {
      lines.push_back({text.substr(at), false});
      break;
    }
    lines.push_back({text.substr(at, end - at), true});
    at = end + 1;
  }
  return lines;
}

bool same(const Line& a, const Line& b) {
  return a.text == b.text && a.has_newline == b.has_newline;
}

enum class Op { keep, remove, add };

// The edit script from a to b, in order.
std::vector<Op> edit_script(const std::vector<Line>& a, const std::vector<Line>& b) {
  const long n = static_cast<long>(a.size()), m = static_cast<long>(b.size());
  const long max = n + m;
  std::vector<long> v(2 * max + 2, 0);
  std::vector<std::vector<long>> trace;
  auto at = [&](long k) -> long& { return v[static_cast<std::size_t>(k + max + 1)]; };
  long found_d = 0;
  for (long d = 0; d <= max; ++d) {
    trace.push_back(v);
    bool done = false;
    for (long k = -d; k <= d; k += 2) {
      long x = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? at(k + 1) : at(k - 1) + 1;
      long y = x - k;
      while (x < n && y < m && same(a[x], b[y])) ++x, ++y;
      at(k) = x;
      if (x >= n && y >= m) {
        done = true;
        break;
      }
    }
    if (done) {
      found_d = d;
      break;
    }
  }
  // Walk the trace back from (n, m).
  std::vector<Op> ops;
  long x = n, y = m;
  for (long d = found_d; d > 0; --d) {
    const std::vector<long>& previous = trace[static_cast<std::size_t>(d)];
    auto prev_at = [&](long k) { return previous[static_cast<std::size_t>(k + max + 1)]; };
    long k = x - y;
    long prev_k = (k == -d || (k != d && prev_at(k - 1) < prev_at(k + 1))) ? k + 1 : k - 1;
    long prev_x = prev_at(prev_k), prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) ops.push_back(Op::keep), --x, --y;
    ops.push_back(x == prev_x ? Op::add : Op::remove);
    x = prev_x;
    y = prev_y;
  }
  while (x > 0 && y > 0) ops.push_back(Op::keep), --x, --y;
  std::reverse(ops.begin(), ops.end());
  return ops;
}

void write_line(std::ostringstream& out, char mark, const Line& line) {
  out << mark << line.text << '\n';
  if (!line.has_newline) out << "\\ No newline at end of file\n";
}

std::string range(long start, long count) {
  // diff -u writes an empty range as "start-1,0" and a one-line range without its count.
  if (count == 0) return std::to_string(start - 1) + ",0";
  if (count == 1) return std::to_string(start);
  return std::to_string(start) + "," + std::to_string(count);
}

}  // namespace

std::string unified_diff(std::string_view before, std::string_view after, std::string_view name) {
  std::vector<Line> a = split_lines(before), b = split_lines(after);
  std::vector<Op> ops = edit_script(a, b);
  if (std::all_of(ops.begin(), ops.end(), [](Op op) { return op == Op::keep; })) return {};
  constexpr long kContext = 3;
  // Position of each op in a and in b.
  std::vector<long> ia(ops.size() + 1), ib(ops.size() + 1);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    ia[i + 1] = ia[i] + (ops[i] != Op::add);
    ib[i + 1] = ib[i] + (ops[i] != Op::remove);
  }
  std::ostringstream out;
  out << "--- a/" << name << "\n+++ b/" << name << "\n";
  const long count = static_cast<long>(ops.size());
  long i = 0;
  while (i < count) {
    if (ops[i] == Op::keep) {
      ++i;
      continue;
    }
    // A hunk: from kContext lines before this change to kContext after the last change that is
    // at most 2 * kContext unchanged lines further on.
    long start = std::max(0L, i - kContext);
    long end = i;
    while (true) {
      while (end < count && ops[end] != Op::keep) ++end;
      long next = end;
      while (next < count && ops[next] == Op::keep) ++next;
      if (next < count && next - end <= 2 * kContext) {
        end = next;
        continue;
      }
      end = std::min(count, end + kContext);
      break;
    }
    long a_count = ia[end] - ia[start], b_count = ib[end] - ib[start];
    out << "@@ -" << range(ia[start] + 1, a_count) << " +" << range(ib[start] + 1, b_count)
        << " @@\n";
    for (long j = start; j < end; ++j) {
      switch (ops[j]) {
        case Op::keep:
          write_line(out, ' ', a[ia[j]]);
          break;
        case Op::remove:
          write_line(out, '-', a[ia[j]]);
          break;
        case Op::add:
          write_line(out, '+', b[ib[j]]);
          break;
      }
    }
    i = end;
  }
  return out.str();
}

}  // namespace r3::report
