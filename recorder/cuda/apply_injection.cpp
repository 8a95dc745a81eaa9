// libr3apply_cuda.so: runs an unmodified CUDA application with the winners of an r3 result in
// place of its tuned kernels. CUDA loads it from CUDA_INJECTION64_PATH (set by `r3 apply`, with
// R3_APPLY_MANIFEST naming what to apply: apply_manifest.hpp) and calls InitializeInjection().
//
// Interception: a CUPTI callback on the driver's launch entry points (cuLaunchKernel,
// cuLaunchKernelEx and their per-thread-stream forms), which every runtime-API launch (static or
// shared runtime) and every driver-API launch goes through. At the callback's entry the
// parameters the driver is about to use are rewritten: the function becomes the winner's kernel
// (its cubin loaded once with cuLibraryLoadData, so one handle serves every context), the block
// and grid the winner's shape. The launch's own parameter buffer is passed on unchanged: a winner
// has its kernel's signature (checked here against the driver's parameter layouts). A launch
// whose function is not in the manifest costs one hash lookup.
//
// Nothing here throws into the application or ends it: a kernel that cannot be substituted (its
// code does not load, another GPU architecture, a different parameter layout) runs the
// application's own code, and the reason is printed once; the counts are printed at exit, with
// the time the tuned kernels took on the GPU (CUPTI kernel activity records, matched to the
// launches by correlation id). With R3_APPLY_SUBSTITUTE=0 (`r3 apply --original`) nothing is
// substituted and only that time is measured: the baseline the applied run is compared with.
// With R3_APPLY_CHECK=1 (`r3 apply --check`) the first substituted launch of each kernel is
// checked against the application's kernel on the same memory (apply_check.hpp).
#include <cuda.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "apply_check.hpp"
#include "apply_manifest.hpp"
#include "launched_function.hpp"
#include "r3/error.hpp"
#include "r3/files.hpp"

namespace {

using r3::capture::Dim3;
using namespace r3::record::cuda;

void say(const std::string& line) { std::fprintf(stderr, "r3 apply: %s\n", line.c_str()); }

std::string to_string(const Dim3& d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

// One kernel of the manifest as this process uses it.
struct Substitution {
  AppliedKernel applied;
  std::string image;          // the cubin, read at start
  CUkernel winner = nullptr;  // loaded at its first launch
  bool tried = false;         // loading was tried (winner or refusal set)
  std::string refused;        // why the application's code runs instead
  std::atomic<std::uint64_t> substituted{0}, kept{0};
  std::uint64_t timed = 0, gpu_ns = 0;  // launches with an activity record, their summed time
  bool checked = false;                 // --check: its first substituted launch was claimed
  // The module variables the winner shares with the application's kernel: the winner's copy
  // gets the application's value before each launch, the application's the winner's after it.
  struct Mirrored {
    std::string name;
    CUdeviceptr application = 0, winner = 0;
    std::size_t bytes = 0;
  };
  std::vector<Mirrored> globals;  // set with `winner`
};

// The substituted launch on this thread whose module variables go back at its exit.
thread_local Substitution* mirroring = nullptr;
thread_local CUstream mirroring_stream = nullptr;

// --check: the launch being checked on this thread, between its entry and its exit callbacks.
struct PendingCheck {
  Substitution* substitution = nullptr;
  OriginalResults original;
};
thread_local std::optional<PendingCheck> pending_check;
// Set while the check runs the application's kernel itself: its callbacks are not the
// application's launches.
thread_local bool running_original = false;

class Applier {
 public:
  static Applier& instance() {
    static Applier* applier = new Applier;  // never destroyed: callbacks may outlive main()
    return *applier;
  }

  void start(const char* manifest_file, bool substitute, bool check) {
    substitute_ = substitute;
    check_ = check && substitute;
    const ApplyManifest manifest = read_manifest(manifest_file);
    architecture_ = manifest.architecture;
    for (const AppliedKernel& k : manifest.kernels) {
      auto s = std::make_unique<Substitution>();
      s->applied = k;
      s->image = r3::read_text_file(k.code, "winner's code", std::uint64_t{1} << 30);
      by_name_[k.kernel] = s.get();
      substitutions_.push_back(std::move(s));
    }
    CUpti_SubscriberHandle subscriber = nullptr;
    if (cuptiSubscribe(&subscriber, &Applier::callback, this) != CUPTI_SUCCESS)
      throw r3::Error("cuptiSubscribe failed (is another CUPTI tool attached?)");
    for (CUpti_CallbackId id :
         {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz})
      cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    if (check_)
      for (CUpti_CallbackId id : kMemoryCalls)
        cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    activity_ = cuptiActivityRegisterCallbacks(&request_activity_buffer,
                                               &Applier::buffer_completed) == CUPTI_SUCCESS &&
                cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS;
    if (!activity_) say("CUPTI kernel activity is not available: no GPU times");
    say(std::string(substitute_ ? "substituting " : "timing, without substituting, ") +
        std::to_string(substitutions_.size()) + " kernel(s) (code for " + architecture_ + ")" +
        (check_ ? ", each checked against the application's kernel at its first launch" : ""));
    std::atexit([] { instance().finish(); });
  }

 private:
  static void CUPTIAPI callback(void* self, CUpti_CallbackDomain, CUpti_CallbackId id,
                                const void* data) {
    const auto* cb = static_cast<const CUpti_CallbackData*>(data);
    if (running_original) return;
    auto* applier = static_cast<Applier*>(self);
    try {
      if (auto event = memory_event(id, cb)) {
        applier->allocations_.on(*event);
      } else if (cb->callbackSite == CUPTI_API_ENTER) {
        applier->launch(id, cb);
      } else {
        if (mirroring) applier->mirror_out();
        if (pending_check) applier->finish_check();
      }
    } catch (...) {
      ++errors_;  // never into the application: its own kernel runs
    }
  }

  void launch(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
    // The parameter structs are the driver's: rewriting them at entry changes what it launches.
    void* params = const_cast<void*>(cb->functionParams);
    switch (id) {
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
        auto* p = static_cast<cuLaunchKernel_params*>(params);
        CUkernel winner = nullptr;
        Substitution* s = substitution(cb, p->f, p->kernelParams, winner, [p] {
          return cuLaunchKernel(p->f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX,
                                p->blockDimY, p->blockDimZ, p->sharedMemBytes, p->hStream,
                                p->kernelParams, p->extra);
        });
        if (!s) return;
        const LaunchDims dims = winner_launch(
            s->applied,
            {{p->gridDimX, p->gridDimY, p->gridDimZ}, {p->blockDimX, p->blockDimY, p->blockDimZ}});
        p->f = reinterpret_cast<CUfunction>(winner);
        p->gridDimX = dims.grid.x, p->gridDimY = dims.grid.y, p->gridDimZ = dims.grid.z;
        p->blockDimX = dims.block.x, p->blockDimY = dims.block.y, p->blockDimZ = dims.block.z;
        mirror_in(*s, stream_of(id, p->hStream));
        ++s->substituted;
        return;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
        auto* p = static_cast<cuLaunchKernelEx_params*>(params);
        if (!p->config) return;
        CUkernel winner = nullptr;
        Substitution* s = substitution(cb, p->f, p->kernelParams, winner, [p] {
          return cuLaunchKernelEx(p->config, p->f, p->kernelParams, p->extra);
        });
        if (!s) return;
        // The application's config is its own (it may launch with it again): the driver gets a
        // copy, kept until this thread's next launch.
        thread_local CUlaunchConfig config;
        config = *p->config;
        const LaunchDims dims =
            winner_launch(s->applied, {{config.gridDimX, config.gridDimY, config.gridDimZ},
                                       {config.blockDimX, config.blockDimY, config.blockDimZ}});
        config.gridDimX = dims.grid.x, config.gridDimY = dims.grid.y, config.gridDimZ = dims.grid.z;
        config.blockDimX = dims.block.x, config.blockDimY = dims.block.y,
        config.blockDimZ = dims.block.z;
        p->config = &config;
        p->f = reinterpret_cast<CUfunction>(winner);
        mirror_in(*s, stream_of(id, config.hStream));
        ++s->substituted;
        return;
      }
      default:
        return;
    }
  }

  // What a launch of `f` runs: null when it is not a tuned kernel or the application's code runs
  // (its winner cannot, or failed its check); else its substitution, with `winner`. Times the
  // launches of tuned kernels; at the first substituted launch of each with --check, runs the
  // application's kernel (`original`: the launch as asked, called before it is rewritten) first.
  template <typename Launch>
  Substitution* substitution(const CUpti_CallbackData* cb, CUfunction f, void** kernel_params,
                             CUkernel& winner, const Launch& original) {
    Substitution* s = substitution_for(f);
    if (!s) return nullptr;
    timed_launch(cb->correlationId, s);
    winner = winner_of(*s, f);
    if (!winner) return nullptr;
    if (check_ && claim_check(*s) && !start_check(*s, f, kernel_params, original)) return nullptr;
    return s;
  }

  // The manifest's entry for a launched function, or null; looked up by name once per handle.
  Substitution* substitution_for(CUfunction f) {
    std::lock_guard lock(mutex_);
    auto [it, added] = by_handle_.try_emplace(f, nullptr);
    if (added) {
      const FunctionNames names = names_of(f);
      auto found = by_name_.find(names.name);
      if (found != by_name_.end()) {
        it->second = found->second;
        library_kernel_[f] = names.is_library_kernel;
      }
    }
    return it->second;
  }

  // The winner's kernel, loaded at its first launch; null (and the original kept, counted) when
  // it cannot stand in for `original`.
  CUkernel winner_of(Substitution& s, CUfunction original) {
    if (!substitute_) {
      ++s.kept;
      return nullptr;
    }
    std::lock_guard lock(mutex_);
    if (!s.tried) {
      s.tried = true;
      s.refused = load(s, original);
      if (!s.refused.empty())
        say("kernel " + s.applied.kernel + ": the application's code runs: " + s.refused);
    }
    if (!s.winner) ++s.kept;
    return s.winner;
  }

  // Loads the winner (callers hold the mutex); returns why it cannot be used, or "".
  std::string load(Substitution& s, CUfunction original) {
    CUdevice device = 0;
    int major = 0, minor = 0;
    if (cuCtxGetDevice(&device) != CUDA_SUCCESS ||
        cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) !=
            CUDA_SUCCESS ||
        cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device) !=
            CUDA_SUCCESS)
      return "the launch's device cannot be asked for its architecture";
    const std::string here = "sm_" + std::to_string(major * 10 + minor);
    if (here != architecture_)
      return "the result's code is for " + architecture_ + ", this GPU is " + here +
             " (tune on this GPU, or replay the result here first)";
    CUlibrary library = nullptr;
    CUresult rc =
        cuLibraryLoadData(&library, s.image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (rc != CUDA_SUCCESS)
      return "its code does not load (cuLibraryLoadData: " + error_name(rc) + ")";
    CUkernel winner = nullptr;
    rc = cuLibraryGetKernel(&winner, library, s.applied.function.c_str());
    if (rc != CUDA_SUCCESS)
      return "its code has no kernel " + s.applied.function + " (" + error_name(rc) + ")";
    const auto theirs = params_of(original, library_kernel_[original]);
    const auto ours = params_of(reinterpret_cast<CUfunction>(winner), true);
    bool same = theirs.size() == ours.size();
    for (std::size_t i = 0; same && i < ours.size(); ++i)
      same = theirs[i].offset == ours[i].offset && theirs[i].size == ours[i].size;
    if (!same)
      return "its parameters (" + std::to_string(ours.size()) +
             ") are not laid out as the application's kernel's (" + std::to_string(theirs.size()) +
             ")";
    // The module variables both have: found in the application's module (the CUkernel's
    // library, or the CUfunction's module) and in the winner's library by name.
    CUlibrary their_library = nullptr;
    CUmodule their_module = nullptr;
    if (library_kernel_[original])
      cuKernelGetLibrary(&their_library, reinterpret_cast<CUkernel>(original));
    else
      cuFuncGetModule(&their_module, original);
    for (const std::string& name : s.applied.globals) {
      Substitution::Mirrored g{name, 0, 0, 0};
      std::size_t ours = 0;
      const CUresult found =
          their_library  ? cuLibraryGetGlobal(&g.application, &g.bytes, their_library, name.c_str())
          : their_module ? cuModuleGetGlobal(&g.application, &g.bytes, their_module, name.c_str())
                         : CUDA_ERROR_NOT_FOUND;
      if (found != CUDA_SUCCESS) continue;  // not in the application's module here
      if (cuLibraryGetGlobal(&g.winner, &ours, library, name.c_str()) != CUDA_SUCCESS)
        continue;  // the winner does not use it
      if (ours != g.bytes)
        return "its module variable " + name + " has " + std::to_string(ours) +
               " bytes, the application's " + std::to_string(g.bytes);
      s.globals.push_back(std::move(g));
    }
    s.winner = winner;
    if (!s.globals.empty())
      say("kernel " + s.applied.kernel + ": " + std::to_string(s.globals.size()) +
          " module variable(s) shared with the application's module");
    return "";
  }

  // The stream a launch runs on: the per-thread default stream for the _ptsz entry points'
  // null stream.
  static CUstream stream_of(CUpti_CallbackId id, CUstream stream) {
    const bool per_thread = id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
                            id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz;
    return stream == nullptr && per_thread ? CU_STREAM_PER_THREAD : stream;
  }

  // The application's values of the shared module variables into the winner's, on the
  // launch's stream, before it; the winner's back at its exit (mirror_out).
  void mirror_in(Substitution& s, CUstream stream) {
    if (s.globals.empty()) return;
    for (const auto& g : s.globals)
      if (cuMemcpyDtoDAsync(g.winner, g.application, g.bytes, stream) != CUDA_SUCCESS) ++errors_;
    mirroring = &s;
    mirroring_stream = stream;
  }

  void mirror_out() {
    for (const auto& g : mirroring->globals)
      if (cuMemcpyDtoDAsync(g.application, g.winner, g.bytes, mirroring_stream) != CUDA_SUCCESS)
        ++errors_;
    mirroring = nullptr;
  }

  // --check: whether this launch is the kernel's first substituted one (then it is checked).
  bool claim_check(Substitution& s) {
    std::lock_guard lock(mutex_);
    if (s.checked) return false;
    s.checked = true;
    return true;
  }

  // Runs the application's kernel on the memory first and keeps its results for the exit of
  // this launch; false (the application's kernel runs, and from now on) when it cannot.
  bool start_check(Substitution& s, CUfunction f, void** kernel_params,
                   const std::function<CUresult()>& original) {
    const FunctionNames names = names_of(f);
    const auto types =
        argument_types(names.demangled, params_of(f, names.is_library_kernel), kernel_params);
    std::string why;
    running_original = true;
    std::optional<OriginalResults> results =
        run_original(allocations_.snapshot(), types, original, why);
    running_original = false;
    if (!results) {
      refuse(s, "--check could not run the application's kernel: " + why);
      ++s.kept;
      return false;
    }
    pending_check = PendingCheck{&s, std::move(*results)};
    return true;
  }

  // At the exit of the checked launch: the winner's results against the original's.
  void finish_check() {
    PendingCheck check = std::move(*pending_check);
    pending_check.reset();
    Substitution& s = *check.substitution;
    const std::string why = compare_with_original(check.original, s.applied.tolerances);
    if (!why.empty()) {
      refuse(s, "--check: " + why + " (its results were replaced by the application's)");
      return;
    }
    std::size_t bytes = 0;
    for (const CheckedRegion& r : check.original.regions) bytes += r.bytes;
    say("kernel " + s.applied.kernel + ": --check: the winner's results match the application's " +
        "kernel's (" + std::to_string(check.original.regions.size()) + " allocation(s), " +
        std::to_string(bytes) + " bytes)");
  }

  // From now on the application's code runs for this kernel.
  void refuse(Substitution& s, const std::string& why) {
    std::lock_guard lock(mutex_);
    s.winner = nullptr;
    s.refused = why;
    say("kernel " + s.applied.kernel + ": the application's code runs from now on: " + why);
  }

  // The launch's activity record, when it comes, is this kernel's.
  void timed_launch(std::uint32_t correlation, Substitution* s) {
    if (!activity_) return;
    std::lock_guard lock(activity_mutex_);
    launches_[correlation] = s;
  }

  static void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t,
                                        size_t valid) {
    try {
      instance().take_activity(buffer, valid);
    } catch (...) {
      ++errors_;
    }
    std::free(buffer);
  }

  void take_activity(uint8_t* buffer, std::size_t valid) {
    std::lock_guard lock(activity_mutex_);
    for_each_kernel_record(buffer, valid, [&](const KernelActivity& k) {
      auto it = launches_.find(k.correlationId);
      if (it == launches_.end()) return;
      ++it->second->timed;
      it->second->gpu_ns += k.end - k.start;
      launches_.erase(it);
    });
  }

  void finish() {
    if (activity_) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard lock(mutex_);
    std::lock_guard activity_lock(activity_mutex_);
    for (const auto& s : substitutions_) {
      std::string line = "kernel " + s->applied.kernel + ": ";
      if (substitute_) {
        line += std::to_string(s->substituted) + " launch(es) ran the winner";
        if (s->applied.block) line += " (block " + to_string(*s->applied.block) + ")";
        if (s->kept > 0)
          line += ", " + std::to_string(s->kept) + " the application's code (" + s->refused + ")";
        if (!s->tried) line += "; never launched";
      } else {
        line +=
            std::to_string(s->kept) + " launch(es) ran the application's code (not substituted)";
      }
      if (s->timed > 0) {
        char times[128];
        std::snprintf(times, sizeof times, "; GPU time %.3f ms over %llu launch(es), %.2f us each",
                      double(s->gpu_ns) / 1e6, static_cast<unsigned long long>(s->timed),
                      double(s->gpu_ns) / 1e3 / double(s->timed));
        line += times;
      }
      say(line);
    }
    if (errors_ > 0)
      say(std::to_string(errors_.load()) +
          " launch(es) could not be looked at and ran the application's code");
  }

  std::string architecture_;
  bool substitute_ = true;
  bool check_ = false;
  Allocations allocations_;  // --check: the application's memory (its own lock)
  bool activity_ = false;
  std::vector<std::unique_ptr<Substitution>> substitutions_;
  std::map<std::string, Substitution*> by_name_;  // fixed after start()
  // The only lock here: guards by_handle_, library_kernel_ and each Substitution's loading
  // (winner, tried, refused). No driver call made under it enters this library again: only
  // launches do, and none is made here.
  std::mutex mutex_;
  std::unordered_map<CUfunction, Substitution*> by_handle_;
  std::unordered_map<CUfunction, bool> library_kernel_;
  // Guards launches_ and each Substitution's timed and gpu_ns. Taken after mutex_ (finish) or
  // alone (launches, CUPTI's buffer callbacks); never the other way round.
  std::mutex activity_mutex_;
  std::unordered_map<std::uint32_t, Substitution*> launches_;  // by CUPTI correlation id
  static inline std::atomic<std::uint64_t> errors_{0};
};

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  try {
    const char* manifest = std::getenv("R3_APPLY_MANIFEST");
    if (manifest == nullptr || *manifest == '\0') {
      say("R3_APPLY_MANIFEST is not set: the application runs unchanged");
      return 1;
    }
    const char* substitute = std::getenv("R3_APPLY_SUBSTITUTE");
    const char* check = std::getenv("R3_APPLY_CHECK");
    Applier::instance().start(manifest, !(substitute && std::string(substitute) == "0"),
                              check && std::string(check) == "1");
  } catch (const std::exception& e) {
    say(std::string("cannot start, the application runs unchanged: ") + e.what());
  } catch (...) {
    say("cannot start, the application runs unchanged");
  }
  return 1;
}
