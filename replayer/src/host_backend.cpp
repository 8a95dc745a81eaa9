// The host backend: C/C++ kernels compiled by Clang/LLVM into this process (ORC JIT) and called
// on memory placed at the recorded addresses.
#include "host_backend.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "candidate_process.hpp"
#include "host_memory.hpp"
#include "r3/compiler/host_compiler.hpp"
#include "r3/error.hpp"
#include "recorded.hpp"
#include "second_input.hpp"
#include "verify.hpp"

namespace r3::replay {
namespace {

struct PreparedRegion {
  capture::Region recorded;
  std::byte* live = nullptr;
  Bytes before;  // prologue content (pointers relocated); null if the launch did not read it
  Bytes after;   // epilogue content; null when the launch left the region unchanged
};

// A launch's second input (second_input.hpp), region by region: what it holds before the launch
// (moved, or as recorded), and what the application's code (the recorded source) leaves there.
struct SecondInput {
  std::vector<Bytes> before;  // null where the launch did not read the region
  std::vector<std::vector<std::byte>> expected;
};

struct PreparedLaunch {
  std::size_t index = 0;
  std::vector<std::max_align_t> args;  // aligned storage for the argument bytes
  std::vector<std::uint64_t> offsets;
  std::vector<PreparedRegion> regions;
  std::optional<SecondInput> second;  // none without floating-point regions it reads
  const unsigned char* arg_bytes() const {
    return reinterpret_cast<const unsigned char*>(args.data());
  }
};

class HostBackend final : public Backend {
 public:
  std::string_view name() const override { return "host"; }
  AddressMode address_mode() const override { return memory_.mode(); }
  std::string placement() const override { return memory_.describe(); }
  // Clang and the JIT keep about 0.3 MB per compile that they do not give back, and each run
  // forks this process twice, at a cost that grows with its memory: a fresh one every 100
  // evaluations keeps the evaluation time flat (364 ms -> 1584 ms over a 2000-evaluation run
  // without it).
  std::size_t evaluations_per_process() const override { return 100; }

  void prepare(const capture::CaptureReader& capture, std::size_t kernel_index,
               std::vector<std::size_t> launches) override {
    require_backend(capture, "host", "the host backend replays captures recorded on the host");
    const capture::Kernel& kernel = capture.kernels().at(kernel_index);
    launches = resolve_launches(kernel, std::move(launches));
    process_.reset();
    // Each region is mapped once and kept as its prologue and epilogue contents.
    check_fits_in_memory(capture, kernel, launches, available_host_memory(), "host memory", 3);
    memory_.place(region_spans(kernel, launches));
    unrecorded_ = unrecorded_spans(kernel, launches, memory_.map());
    prepared_.clear();
    RelocatedContents contents(capture, memory_.map());
    auto content = [&](const capture::Region& region) { return contents.get(region); };
    for (std::size_t index : launches) {
      const capture::Launch& launch = kernel.launches[index];
      PreparedLaunch prepared;
      prepared.index = index;
      prepared.args.resize((launch.args.size() + sizeof(std::max_align_t) - 1) /
                           sizeof(std::max_align_t));
      std::memcpy(prepared.args.data(), launch.args.data(), launch.args.size());
      memory_.map().relocate_arguments(
          std::span(reinterpret_cast<std::byte*>(prepared.args.data()), launch.args.size()),
          kernel.params);
      for (const capture::Param& param : kernel.params) prepared.offsets.push_back(param.offset);
      for (const RegionStates& state : region_states(launch)) {
        prepared.regions.push_back({*state.region, memory_.live(state.region->address),
                                    state.before ? content(*state.before) : nullptr,
                                    state.after ? content(*state.after) : nullptr});
      }
      prepared_.push_back(std::move(prepared));
    }
    kernel_name_ = kernel.name;
    recorded_source_ = recorded_image(capture, kernel, capture::kImageSource);
    cache_.clear();
    std::vector<std::span<std::byte>> memory;
    for (const AddressMap::Mapping& mapping : memory_.map().mappings())
      memory.emplace_back(reinterpret_cast<std::byte*>(mapping.live), mapping.length);
    process_ = std::make_unique<CandidateProcess>(std::move(memory));
    prepare_second_inputs();
  }

  Compiled compile(const Variant& variant) override {
    const bool recorded = variant.source_text.empty();
    Hasher hasher;
    hasher.update_field(variant.key().hex()).update_field(compiler::host_target());
    if (recorded) hasher.update_field(recorded_source_).update_field(kernel_name_);
    const Hash128 key = hasher.digest();
    if (auto cached = cache_.find(key)) return *cached;
    Compiled compiled;
    compiled.key = key;
    if (recorded && recorded_source_.empty()) {
      compiled.diagnostics = "the capture holds no source for kernel '" + kernel_name_ +
                             "': give the variant's source (r3 replay --source FILE)";
      return compiled;
    }
    compiler::Source source;
    source.name = variant.source_name.empty() ? kernel_name_ + ".cpp" : variant.source_name;
    source.text = recorded ? recorded_source_ : variant.source_text;
    source.defines = variant.defines;
    source.include_dirs = variant.include_dirs;
    source.flags = variant.flags;
    std::string entry = variant.entry.empty() ? kernel_name_ : variant.entry;
    compiler::HostCompileResult result =
        compiler::compile_host_kernel(source, entry, variant.passes);
    compiled.ok = result.ok();
    compiled.diagnostics = result.diagnostics;
    compiled.seconds = result.frontend_seconds + result.passes_seconds + result.codegen_seconds;
    compiled.resources.code_bytes = result.code_bytes;
    compiled.code = result.kernel;
    cache_.put(key, compiled);
    return compiled;
  }

  void set_candidate_limits(const CandidateLimits& limits) override { limits_ = limits; }
  std::vector<std::filesystem::path> compiler_reads() const override {
    return {compiler::clang_resource_dir()};
  }

  // Every run of the candidate is a process of its own (candidate_process.hpp): each one starts
  // from the same state, and each timed one is verified, so that neither a result kept from an
  // earlier run nor a "done" said too early can pass for speed.
  RunResult run(const Compiled& compiled, const RunOptions& options) override {
    if (auto failed = not_compiled(compiled)) return *failed;
    RunResult result;
    auto kernel = std::static_pointer_cast<const compiler::HostKernel>(compiled.code);
    const compiler::HostEntry entry = compiler::entry_of(*kernel);
    CandidateProcess& process = candidate_process();
    for (const PreparedLaunch& launch : prepared_) {
      LaunchResult launch_result;
      launch_result.launch = launch.index;
      auto candidate = [&] { entry(launch.arg_bytes(), launch.offsets.data()); };
      auto fail = [&](Outcome outcome, const std::string& what) {
        result.outcome = outcome;
        result.message = "launch " + std::to_string(launch.index) + ": " + what;
        result.launches.push_back(std::move(launch_result));
        return result;
      };
      CandidateCall call = process.run([&] { restore(launch, /*all=*/true); }, candidate);
      if (!call.returned()) return fail(Outcome::crash, "the candidate " + call.failure);
      if (!verify(launch, options, launch_result))
        return fail(Outcome::wrong_result, first_failure(launch_result));
      if (launch.second) {
        call = process.run([&] { restore(launch, /*all=*/true, /*second=*/true); }, candidate);
        if (!call.returned())
          return fail(Outcome::crash, "the candidate, on a second input, " + call.failure);
        LaunchResult second;
        second.launch = launch.index;
        const bool passed = verify_second_input(launch, options, second);
        restore(launch, /*all=*/true);  // the recorded contents again, for the timed runs
        if (!passed) {
          result.outcome = Outcome::wrong_result;
          result.message = failed_on_second_input(launch.index, first_failure(second));
          result.launches.push_back(std::move(second));
          return result;
        }
      }
      for (std::uint32_t i = 0; i < options.warmup; ++i) {
        call = process.run([&] { restore(launch, /*all=*/false); }, candidate);
        if (!call.returned()) return fail(Outcome::crash, "the candidate " + call.failure);
      }
      std::vector<double> samples;
      double restore_total = 0;
      for (std::uint32_t i = 0; i < options.repeats; ++i) {
        call = process.run([&] { restore(launch, /*all=*/false); }, candidate);
        restore_total += call.before_seconds;
        if (!call.returned()) return fail(Outcome::crash, "the candidate " + call.failure);
        if (!verify(launch, options, launch_result))
          return fail(Outcome::wrong_result, "timed run " + std::to_string(i + 1) + " of " +
                                                 std::to_string(options.repeats) + ": " +
                                                 first_failure(launch_result));
        samples.push_back(call.seconds);
      }
      launch_result.time = summarise(std::move(samples));
      launch_result.restore_seconds = options.repeats > 0 ? restore_total / options.repeats : 0;
      result.seconds += launch_result.time.median;
      result.launches.push_back(std::move(launch_result));
    }
    return result;
  }

 private:
  // Puts back what the launch read: all of it, or (between repeats of a launch that verified)
  // only what it writes; as recorded or, with `second`, as on its second input.
  static void restore(const PreparedLaunch& launch, bool all, bool second = false) {
    for (std::size_t r = 0; r < launch.regions.size(); ++r) {
      const PreparedRegion& region = launch.regions[r];
      const Bytes& before = second ? launch.second->before[r] : region.before;
      if (before && (all || region.after)) std::memcpy(region.live, before->data(), before->size());
    }
  }

  // What the candidate left on the launch's second input against what the application's code
  // left there (second_input.hpp), and nothing written out of bounds.
  bool verify_second_input(const PreparedLaunch& launch, const RunOptions& options,
                           LaunchResult& out) {
    bool passed = true;
    for (std::size_t r = 0; r < launch.regions.size(); ++r) {
      const std::vector<std::byte>& expected = launch.second->expected[r];
      if (expected.empty()) continue;
      std::span<const std::byte> before;
      if (launch.second->before[r]) before = *launch.second->before[r];
      RegionCheck check = check_on_second_input(std::span(launch.regions[r].live, expected.size()),
                                                expected, before, launch.regions[r].recorded, options);
      passed = passed && check.passed;
      out.regions.push_back(std::move(check));
    }
    out.verified = passed;
    return check_unrecorded(out) && passed;
  }

  // The second input of every prepared launch that reads floating-point data, and what the
  // application's code (its recorded source, compiled as the original candidate is) leaves on
  // it. Where that code cannot run on it, launches are verified on the recording alone.
  void prepare_second_inputs() {
    bool any = false;
    std::uint64_t bytes = 0;
    for (PreparedLaunch& launch : prepared_) {
      std::vector<RegionBefore> regions;
      for (const PreparedRegion& region : launch.regions)
        regions.push_back({region.before, region.recorded.element_type, region.recorded.size});
      const MovedContents moved = moved_contents(launch.index, regions);
      if (moved.regions.empty()) continue;
      SecondInput second;
      for (std::size_t r = 0; r < launch.regions.size(); ++r)
        second.before.push_back(moved.regions[r] ? moved.regions[r] : launch.regions[r].before);
      second.expected.resize(launch.regions.size());
      launch.second = std::move(second);
      bytes += moved.bytes;
      any = true;
    }
    if (!any) return;
    auto drop = [&](const std::string& why) {
      for (PreparedLaunch& launch : prepared_) launch.second.reset();
      warn_no_second_input(kernel_name_, why);
    };
    if (std::string why = second_input_memory_short(bytes); !why.empty()) return drop(why);
    if (recorded_source_.empty()) return drop("the capture holds no source of the kernel");
    const Compiled reference = compile(Variant{});
    if (!reference.ok) return drop("the recorded source does not compile: " + reference.diagnostics);
    const compiler::HostEntry entry =
        compiler::entry_of(*std::static_pointer_cast<const compiler::HostKernel>(reference.code));
    for (PreparedLaunch& launch : prepared_) {
      if (!launch.second) continue;
      CandidateCall call =
          process_->run([&] { restore(launch, /*all=*/true, /*second=*/true); },
                        [&] { entry(launch.arg_bytes(), launch.offsets.data()); });
      if (!call.returned()) return drop("the application's code " + call.failure);
      for (std::size_t r = 0; r < launch.regions.size(); ++r) {
        const PreparedRegion& region = launch.regions[r];
        launch.second->expected[r].assign(region.live, region.live + region.recorded.size);
      }
      LaunchResult ignored;
      check_unrecorded(ignored);  // zeroes what it wrote out of bounds, if anything
      restore(launch, /*all=*/true);
    }
  }

  bool verify(const PreparedLaunch& launch, const RunOptions& options, LaunchResult& out) {
    bool passed = verify_regions(
        launch.regions, options, out,
        [](const PreparedRegion& region, bool changes, const replay::Tolerance& tolerance,
           capture::ElementType type) {
          const std::vector<std::byte>& expected = changes ? *region.after : *region.before;
          std::span<const std::byte> before;
          if (changes && region.before) before = *region.before;
          return compare_region(std::span(region.live, expected.size()), expected, type,
                                tolerance, before);
        });
    return check_unrecorded(out) && passed;
  }

  // Out-of-bounds writes: what no region covers must still be zero (and is zeroed again).
  bool check_unrecorded(LaunchResult& out) {
    bool clean = true;
    for (const UnrecordedSpan& span : unrecorded_) {
      std::byte* live = memory_.live(span.address);
      std::uint64_t written = 0;
      std::int64_t first = -1;
      for (std::uint64_t i = 0; i < span.size; ++i) {
        if (live[i] == std::byte{0}) continue;
        if (first < 0) first = static_cast<std::int64_t>(i);
        ++written;
      }
      if (written == 0) continue;
      out.regions.push_back(out_of_bounds_check(span, written, first));
      std::memset(live, 0, span.size);
      clean = false;
    }
    if (!clean) out.verified = false;
    return clean;
  }

  CandidateProcess& candidate_process() {
    if (!process_) throw Error("the host backend runs nothing before prepare()");
    process_->set_limits(limits_);
    return *process_;
  }

  HostMemory memory_;
  CandidateLimits limits_;
  std::unique_ptr<CandidateProcess> process_;  // made by prepare(), on the memory it placed
  std::vector<UnrecordedSpan> unrecorded_;
  std::vector<PreparedLaunch> prepared_;
  std::string kernel_name_;
  std::string recorded_source_;
  // Few: each compiled kernel keeps its own JIT (about 0.7 MB resident), and every run forks this
  // process twice (keeper, candidate process), at a cost that grows with its memory. With 256
  // kept, a 2000-candidate demo run's evaluations went from 0.36 s to 1.6 s each.
  CompiledCache cache_{16};
};

}  // namespace

std::unique_ptr<Backend> make_host_backend() { return std::make_unique<HostBackend>(); }

}  // namespace r3::replay
