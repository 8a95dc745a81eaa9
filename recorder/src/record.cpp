#include "r3/record/call.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "r3/error.hpp"
#include "r3/files.hpp"
#include "r3/inspect.hpp"
#include "r3/log.hpp"
#include "session.hpp"

namespace r3::record {
namespace {

using capture::CaptureWriter;
using namespace session;

struct Snapshot {
  Call::DeclaredRegion region;
  std::vector<std::byte> before;
};

struct Pending {
  std::string kernel;
  std::uint64_t sequence = 0;
  Call call;
  std::vector<Snapshot> snapshots;
};

struct KernelState {
  std::optional<std::size_t> id;  // set once the kernel is in the capture
  std::vector<capture::Param> params;
  std::set<Hash128> distinct;  // launches recorded, by argument-and-shape hash
};

class Recorder;
Recorder& recorder();

class Recorder {
 public:
  Recorder()
      : output_(output_path()),
        selection_text_(environment(kKernelsVariable).empty() ? ".*"
                                                              : environment(kKernelsVariable)) {
    try {
      selection_ = std::regex(selection_text_, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      log::error("record: kernel selection '", selection_text_, "' is not a valid regex (",
                 e.what(), "); nothing will be recorded");
      valid_ = false;
    }
    std::string launches = environment(kLaunchesVariable);
    if (!launches.empty()) launches_per_kernel_ = std::strtoul(launches.c_str(), nullptr, 10);
    if (launches_per_kernel_ == 0) launches_per_kernel_ = 1;
  }

  ~Recorder() { finish(); }

  // Closes the capture and reports, once. Runs from an atexit handler registered after HDF5's
  // own (so before HDF5 shuts down), or from the destructor when nothing was recorded.
  void finish() noexcept {
    try {
      std::lock_guard lock(mutex_);
      if (finished_) return;
      finished_ = true;
      if (writer_) writer_->close();
      report();
    } catch (const std::exception& e) {
      log::error("record: closing ", output_, ": ", e.what());
    }
  }

  // Describes and snapshots the call if it is to be recorded.
  std::optional<Pending> before(std::string_view kernel,
                                const std::function<void(Call&)>& describe) {
    std::lock_guard lock(mutex_);
    std::uint64_t sequence = sequence_++;
    std::string name(kernel);
    called_.insert(name);
    if (!valid_ || !std::regex_search(name, selection_)) return std::nullopt;
    ++matched_;
    KernelState& state = kernels_[name];
    if (state.distinct.size() >= launches_per_kernel_) return std::nullopt;
    Pending pending{name, sequence, Call{}, {}};
    describe(pending.call);
    Hash128 shape = shape_hash(pending.call);
    if (state.distinct.contains(shape)) return std::nullopt;
    for (const Call::DeclaredRegion& region : pending.call.regions()) {
      const auto* bytes = static_cast<const std::byte*>(region.data);
      pending.snapshots.push_back({region, std::vector<std::byte>(bytes, bytes + region.bytes)});
    }
    return pending;
  }

  void after(Pending& pending, double app_time_us) {
    std::lock_guard lock(mutex_);
    KernelState& state = kernels_[pending.kernel];
    CaptureWriter& writer = open_writer();
    capture::Launch launch;
    launch.sequence = pending.sequence;
    launch.args = pending.call.arg_bytes();
    launch.app_time_us = app_time_us;
    for (Snapshot& snapshot : pending.snapshots) {
      const Call::DeclaredRegion& declared = snapshot.region;
      capture::Region region{declared.name,
                             capture::RegionKind::allocation,
                             reinterpret_cast<std::uintptr_t>(declared.data),
                             declared.bytes,
                             declared.type,
                             writer.put_content(snapshot.before)};
      launch.prologue.push_back(region);
      std::span<const std::byte> now(static_cast<const std::byte*>(declared.data), declared.bytes);
      if (declared.bytes > 0 &&
          std::memcmp(now.data(), snapshot.before.data(), declared.bytes) != 0) {
        region.content = writer.put_content(now);
        launch.epilogue.push_back(region);
      }
    }
    std::vector<capture::Param> params = describe_params(pending.call);
    if (!state.id) {
      state.id = writer.add_kernel(describe_kernel(pending, params, writer));
      state.params = params;
    } else if (params != state.params) {
      throw Error("kernel '" + pending.kernel +
                  "' was called with another parameter list than before; launch " +
                  std::to_string(pending.sequence) + " is not recorded");
    }
    writer.add_launch(*state.id, launch);
    state.distinct.insert(shape_hash(pending.call));
    ++recorded_;
  }

  void failed(std::string_view kernel, const std::string& why) {
    std::lock_guard lock(mutex_);
    ++failures_;
    log::error("record: kernel '", kernel, "': ", why);
  }

 private:
  static Hash128 shape_hash(const Call& call) {
    Hasher hasher;
    hasher.update(call.arg_bytes());
    for (const Call::DeclaredRegion& region : call.regions()) {
      std::uint64_t size = region.bytes;
      hasher.update(&size, sizeof size);
    }
    return hasher.digest();
  }

  static std::vector<capture::Param> describe_params(const Call& call) {
    std::vector<capture::Param> params;
    for (const Call::Arg& arg : call.args()) {
      bool points_into_region = false;
      if (arg.pointer && arg.size == sizeof(std::uintptr_t)) {
        std::uintptr_t value = 0;
        std::memcpy(&value, call.arg_bytes().data() + arg.offset, sizeof value);
        for (const Call::DeclaredRegion& region : call.regions()) {
          auto start = reinterpret_cast<std::uintptr_t>(region.data);
          if (value >= start && value <= start + region.bytes) points_into_region = true;
        }
      }
      params.push_back({arg.offset, arg.size, points_into_region, arg.type});
    }
    return params;
  }

  capture::Kernel describe_kernel(const Pending& pending, std::vector<capture::Param> params,
                                  CaptureWriter& writer) {
    capture::Kernel kernel;
    kernel.name = pending.kernel;
    kernel.params = std::move(params);
    const std::string& path = pending.call.source_path();
    if (!path.empty()) {
      std::optional<std::string> why = not_a_readable_file(path);
      if (!why) {
        std::string text = read_text_file(path, "source");
        kernel.images[std::string(capture::kImageSource)] =
            writer.put_content(std::as_bytes(std::span(text)));
      } else {
        log::warning("record: kernel '", pending.kernel, "': its source ", path, " ", *why,
                     "; `r3 replay` will need --source");
      }
    }
    return kernel;
  }

  CaptureWriter& open_writer() {
    if (!writer_) {
      capture::CaptureInfo info;
      info.command_line = this_command_line();
      info.rank = log::rank_from_environment().value_or(-1);
      info.device = host_device_info();
      writer_ = CaptureWriter::create(output_, info);
      std::atexit([] { recorder().finish(); });
    }
    return *writer_;
  }

  void report() const {
    std::string called;
    for (const std::string& name : called_) called += (called.empty() ? "" : ", ") + name;
    if (recorded_ > 0) {
      std::size_t kernels = 0;
      for (const auto& [name, state] : kernels_) kernels += state.id ? 1 : 0;
      log::info("record: wrote ", recorded_, " launch(es) of ", kernels, " kernel(s) to ", output_);
    } else if (called_.empty()) {
      log::warning("record: the application called no kernel through r3::record::call");
    } else if (matched_ == 0) {
      // (When a kernel matched, what stopped its launches, the capture file say, is said above
      // and counted below: not that nothing matched.)
      log::warning("record: no launch was recorded: no kernel matched '", selection_text_,
                   "'; the application called: ", called);
    }
    if (failures_ > 0) {
      log::error("record: ", failures_, " launch(es) could not be recorded (see above)");
    }
  }

  std::mutex mutex_;
  std::string output_;
  std::string selection_text_;
  std::regex selection_;
  bool valid_ = true;
  unsigned long launches_per_kernel_ = 1;
  std::uint64_t sequence_ = 0;
  std::optional<CaptureWriter> writer_;
  std::map<std::string, KernelState> kernels_;
  std::set<std::string> called_;
  std::uint64_t recorded_ = 0;
  std::uint64_t failures_ = 0;
  std::uint64_t matched_ = 0;  // launches of selected kernels
  bool finished_ = false;
};

Recorder& recorder() {
  static Recorder instance;
  return instance;
}

}  // namespace

namespace detail {
const bool recording = recording_requested();
}  // namespace detail

Call& Call::add_arg(const void* data, std::size_t size, std::size_t alignment, std::string type,
                    bool pointer) {
  std::size_t offset = (args_.size() + alignment - 1) / alignment * alignment;
  args_.resize(offset + size);
  std::memcpy(args_.data() + offset, data, size);
  arg_list_.push_back({offset, size, std::move(type), pointer});
  return *this;
}

Call& Call::region(std::string_view name, const void* data, std::size_t bytes,
                   capture::ElementType type) {
  regions_.push_back({std::string(name), data, bytes, type});
  return *this;
}

Call& Call::source(std::string_view path) {
  source_ = std::string(path);
  return *this;
}

void record_call(std::string_view kernel, const std::function<void(Call&)>& describe,
                 const std::function<void()>& run) {
  std::optional<Pending> pending;
  try {
    pending = recorder().before(kernel, describe);
  } catch (const std::exception& e) {
    recorder().failed(kernel, e.what());
  }
  auto start = std::chrono::steady_clock::now();
  run();  // exactly once, whatever the recorder did
  double elapsed_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  if (!pending) return;
  try {
    recorder().after(*pending, elapsed_us);
  } catch (const std::exception& e) {
    recorder().failed(kernel, e.what());
  }
}

capture::DeviceInfo host_device_info() {
  capture::DeviceInfo device;
  device.backend = "host";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      device.name = line.substr(line.find(':') + 2);
      break;
    }
  }
  if (device.name.empty()) device.name = "unknown CPU";
  utsname machine{};
  if (uname(&machine) == 0) device.architecture = machine.machine;
  device.multiprocessor_count = static_cast<int>(std::thread::hardware_concurrency());
  device.memory_bytes = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                        static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  return device;
}

}  // namespace r3::record
