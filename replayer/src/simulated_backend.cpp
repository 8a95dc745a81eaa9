#include "simulated_backend.hpp"

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "r3/error.hpp"
#include "r3/replay/simulation.hpp"

namespace r3::replay {
namespace {

using nlohmann::json;

// A number in [0, 1) drawn from `key` and `salt`: the same for the same candidate.
double draw(const Hash128& key, std::string_view salt) {
  Hasher hasher;
  hasher.update_field(key.hex()).update_field(std::string(salt));
  const std::uint64_t bits = hasher.digest().high;
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

bool changes_the_build(const Variant& v) {
  static const std::regex default_pipeline("(default<O[0-3]>)?");
  return !v.flags.empty() || !v.defines.empty() || v.block.has_value() ||
         !std::regex_match(v.passes, default_pipeline);
}

void sleep_for(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

class SimulatedBackend final : public Backend {
 public:
  explicit SimulatedBackend(SimulationOptions options) : options_(options) {}

  std::string_view name() const override { return "simulate"; }
  void prepare(const capture::CaptureReader& capture, std::size_t kernel,
               std::vector<std::size_t> launches) override {
    const capture::Kernel& k = capture.kernels().at(kernel);
    launches_ = launches.empty() ? k.launches.size() : launches.size();
    if (launches_ == 0) throw Error("kernel " + k.name + " has no recorded launch to simulate");
    // The child's start, once per process (a backend is made per kernel).
    static bool prepared_in_this_process = false;
    if (!prepared_in_this_process) sleep_for(options_.prepare_s);
    prepared_in_this_process = true;
  }
  AddressMode address_mode() const override { return AddressMode::same_address; }
  bool lost() const override { return lost_; }
  std::string placement() const override {
    return "simulated (" + std::to_string(launches_) + " launch(es), no memory)";
  }

  Compiled compile(const Variant& variant) override {
    Compiled c;
    c.key = variant.key();
    const double seconds = scaled(options_.compile_s, draw(c.key, "compile"));
    sleep_for(seconds);
    c.seconds = seconds;
    c.ok = !(changes_the_build(variant) && draw(c.key, "fails") < options_.failure_rate / 2);
    if (!c.ok) c.diagnostics = "simulated compile error";
    c.resources.registers = 16 + static_cast<int>(draw(c.key, "registers") * 48);
    c.resources.code_bytes = 4096;
    c.code = std::make_shared<const Simulated>(Simulated{c.key, changes_the_build(variant)});
    return c;
  }

  RunResult run(const Compiled& compiled, const RunOptions& options) override {
    const auto& code = *static_cast<const Simulated*>(compiled.code.get());
    RunResult result;
    if (code.changes_build && draw(code.key, "lost") < options_.lost_rate) {
      // The candidate's own cost; the new child's start is prepare_s, in prepare().
      sleep_for(options_.lost_s);
      lost_ = true;
      result.outcome = Outcome::launch_error;
      result.message = "simulated lost context (as CUDA_ERROR_ILLEGAL_ADDRESS)";
      return result;
    }
    sleep_for(scaled(options_.run_s, draw(code.key, "run")));
    const double failing = draw(code.key, "wrong");
    if (code.changes_build && failing < options_.failure_rate / 2) {
      result.outcome = Outcome::wrong_result;
      result.message = "simulated wrong result";
      return result;
    }
    const double factor = code.changes_build ? 0.5 + draw(code.key, "speed") : 1.0;
    const double kernel = options_.kernel_s * factor;
    for (std::size_t l = 0; l < launches_; ++l) {
      LaunchResult launch;
      launch.launch = l;
      launch.verified = true;
      launch.time.samples.assign(std::max<std::uint32_t>(1, options.repeats), kernel);
      launch.time.median = launch.time.min = launch.time.max = kernel;
      result.launches.push_back(std::move(launch));
      result.seconds += kernel;
    }
    return result;
  }

 private:
  struct Simulated {
    Hash128 key;
    bool changes_build = false;
  };
  double scaled(double mean, double u) const { return mean * (1 + options_.spread * (2 * u - 1)); }

  SimulationOptions options_;
  std::size_t launches_ = 0;
  bool lost_ = false;
};

}  // namespace

std::string encode(const SimulationOptions& o) {
  return json{{"compile_s", o.compile_s},       {"run_s", o.run_s},
              {"spread", o.spread},             {"failure_rate", o.failure_rate},
              {"kernel_s", o.kernel_s},         {"lost_rate", o.lost_rate},
              {"lost_s", o.lost_s},             {"prepare_s", o.prepare_s}}
      .dump();
}

SimulationOptions decode_simulation(std::string_view text) {
  SimulationOptions o;
  if (text.empty()) return o;
  try {
    json j = json::parse(text);
    o.compile_s = j.value("compile_s", o.compile_s);
    o.run_s = j.value("run_s", o.run_s);
    o.spread = j.value("spread", o.spread);
    o.failure_rate = j.value("failure_rate", o.failure_rate);
    o.kernel_s = j.value("kernel_s", o.kernel_s);
    o.lost_rate = j.value("lost_rate", o.lost_rate);
    o.lost_s = j.value("lost_s", o.lost_s);
    o.prepare_s = j.value("prepare_s", o.prepare_s);
  } catch (const json::exception& e) {
    throw FormatError(std::string("the simulate backend's settings: ") + e.what());
  }
  if (o.compile_s < 0 || o.run_s < 0 || o.spread < 0 || o.spread > 1 || o.failure_rate < 0 ||
      o.failure_rate > 1 || o.kernel_s <= 0 || o.lost_rate < 0 || o.lost_rate > 1 || o.lost_s < 0 ||
      o.prepare_s < 0)
    throw FormatError("the simulate backend's settings are out of range: " + encode(o));
  return o;
}

std::unique_ptr<Backend> make_simulated_backend(std::string_view options) {
  return std::make_unique<SimulatedBackend>(decode_simulation(options));
}

}  // namespace r3::replay
