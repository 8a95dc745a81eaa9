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

ProcessResult run_process(const std::vector<std::string>& argv,
                          std::chrono::seconds timeout = std::chrono::seconds(120),
                          const std::vector<std::string>& extra_environment = {});

}  // namespace r3::test
