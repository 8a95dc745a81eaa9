// Runs a program to completion with its output captured, for tests of the command-line tools.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace r3::test {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal or timed out
  int signal = 0;
  bool timed_out = false;
  std::string out;
  std::string err;
};

inline bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// How often `needle` occurs in `text` (overlapping occurrences too).
inline int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          std::chrono::seconds timeout = std::chrono::seconds(120),
                          const std::vector<std::string>& extra_environment = {});

// Records `steps` steps of the demo stencil (examples/demo) on an n x n grid into `capture` with
// `r3 record --launches 2`: the steps alternate two buffers, so that is every distinct launch.
// Returns r3 record's result.
ProcessResult record_demo(const std::string& r3, const std::string& stencil,
                          const std::string& capture, int n, int steps);

}  // namespace r3::test
