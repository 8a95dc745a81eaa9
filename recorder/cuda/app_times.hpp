// Each recorded launch's time inside the application: the median duration, on the GPU, of the
// application's own launches of that kernel with the same grid and block (CUPTI's kernel
// activity records), leaving out the recorded launch itself, which ran after the recorder's
// copies, unless it was the only one. Its own lock: CUPTI hands activity buffers over on a
// thread of its own, while launches are recorded.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "r3/capture.hpp"

namespace r3::record::cuda {

// One launch of a kernel in the application.
struct AppLaunch {
  capture::Dim3 grid, block;
  double us = 0;
  std::uint32_t correlation = 0;  // CUPTI's id of the launch
};

// A launch as written to the capture, kept (without its contents) until the application's own
// times are known at exit.
struct WrittenLaunch {
  std::size_t kernel_id = 0, index = 0;  // in the capture
  std::string name;
  std::uint32_t correlation = 0;
  capture::Launch launch;
};

class AppTimes {
 public:
  // Keep the launches of the kernel `name` from now on (a recorded kernel's).
  void time(const std::string& name);
  // One launch of the application; kept when its kernel is timed, up to a bound per kernel.
  void add(const char* name, const AppLaunch& launch);
  void written(WrittenLaunch launch);
  // Calls `set` with each written launch whose app_time_us the samples give; returns for how
  // many it said true.
  std::size_t apply(const std::function<bool(const WrittenLaunch&)>& set);

 private:
  static constexpr std::size_t kSamplesPerKernel = 100000;
  std::mutex mutex_;
  std::set<std::string, std::less<>> timed_;
  std::map<std::string, std::vector<AppLaunch>, std::less<>> samples_;  // by kernel name
  std::vector<WrittenLaunch> written_;
};

}  // namespace r3::record::cuda
