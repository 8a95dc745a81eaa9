// libr3record_cuda.so: records kernel launches of an unmodified CUDA application. CUDA loads it
// from CUDA_INJECTION64_PATH (set by `r3 record`) and calls InitializeInjection(), also in
// applications linked with the static CUDA runtime. Through CUPTI callbacks it tracks device
// allocations and the loaded cubins; for each selected launch (kernel-name regex over mangled
// and demangled names and the Kokkos label, first N distinct launches by shape-and-argument
// hash) it synchronises, reads the memory the launch can reach (or every live allocation),
// lets the launch run, synchronises, reads it again and writes the launch to the capture.
//
// Nothing here throws into CUDA or exits: failures are logged, counted and summarised at exit,
// and the application runs on as if it were not recorded.
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "allocations.hpp"
#include "app_times.hpp"
#include "code_images.hpp"
#include "launched_function.hpp"
#include "r3/capture.hpp"
#include "r3/cuda_device.hpp"
#include "r3/cuda_error.hpp"
#include "r3/error.hpp"
#include "r3/hash.hpp"
#include "r3/log.hpp"
#include "r3/record/call.hpp"
#include "session.hpp"

namespace {

using namespace r3;
using namespace r3::record::session;

// The label of the Kokkos kernel being launched, from the Kokkos Tools connector. Kokkos loads
// the connector (KOKKOS_TOOLS_LIBS) late in Kokkos::initialize, after its CUDA back-end has made
// its first launches: the connector's function is looked up until it is there, and only in an
// application that was given a Kokkos tool at all (r3 record --kokkos).
std::string kokkos_label() {
  using LabelFn = const char* (*)();
  static const bool has_kokkos_tool = std::getenv("KOKKOS_TOOLS_LIBS") != nullptr ||
                                      std::getenv("KOKKOS_PROFILE_LIBRARY") != nullptr;
  static std::atomic<LabelFn> connector{nullptr};
  if (!has_kokkos_tool) return "";
  LabelFn fn = connector.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = reinterpret_cast<LabelFn>(dlsym(RTLD_DEFAULT, "r3_kokkos_current_label"));
    if (fn == nullptr) return "";
    connector.store(fn, std::memory_order_release);
  }
  const char* label = fn();
  return label ? label : "";
}

// The connector's r3_kokkos_choices, looked up (dlsym takes the loader's lock) outside the
// recorder's mutex, until it is there.
using KokkosChoicesFn = const char* (*)(const char*);
KokkosChoicesFn kokkos_choices_function() {
  static std::atomic<KokkosChoicesFn> connector{nullptr};
  KokkosChoicesFn fn = connector.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = reinterpret_cast<KokkosChoicesFn>(dlsym(RTLD_DEFAULT, "r3_kokkos_choices"));
    if (fn != nullptr) connector.store(fn, std::memory_order_release);
  }
  return fn;
}

// The candidates the application declared for the Kokkos kernel `label`'s tuning variables (the
// connector's r3_kokkos_choices, `fn`), read when the kernel is first recorded. Empty without
// any, or with a connector that cannot say; a text the capture cannot take is dropped with a
// warning.
std::map<std::string, std::vector<std::int64_t>> kokkos_choices(KokkosChoicesFn fn,
                                                                const std::string& label) {
  const char* text = fn && !label.empty() ? fn(label.c_str()) : nullptr;
  if (text == nullptr) return {};
  try {
    return capture::parse_kokkos_choices(text, "the Kokkos connector");
  } catch (const Error& e) {
    log::warning("kernel '", label, "': ", e.what());
    return {};
  }
}

// A driver call inside the recorder: a failure becomes a CudaError naming the call
// (r3/cuda_error.hpp, as the replayer's).
#define R3_REC_CU(call)                                                                 \
  do {                                                                                  \
    CUresult rc_ = (call);                                                              \
    if (rc_ != CUDA_SUCCESS)                                                            \
      throw r3::CudaError(#call, static_cast<int>(rc_), record::cuda::error_name(rc_)); \
  } while (0)

using record::cuda::KernelActivity;
using record::cuda::WrittenLaunch;

struct PendingRegion {
  capture::RegionKind kind = capture::RegionKind::allocation;
  std::string name;  // a global's symbol
  std::uint64_t address = 0, size = 0;
  std::vector<std::byte> before;
  capture::ElementType element_type = capture::ElementType::unknown;
};

struct Pending {
  std::string name;
  std::size_t kernel = 0;  // index into kernels_
  std::uint32_t correlation = 0;
  capture::Launch launch;
  std::vector<PendingRegion> regions;
  CUevent start = nullptr, stop = nullptr;
};

using record::cuda::names_of;
using record::cuda::params_of;
using Names = record::cuda::FunctionNames;

// A module global or __constant__ variable of a kernel's module, where it lives in this run.
struct ModuleGlobal {
  std::string name;
  std::uint64_t address = 0, size = 0;
};

struct KernelRecord {
  capture::Kernel kernel;  // name, names, params (no launches)
  std::optional<std::size_t> id;
  std::set<r3::Hash128> distinct;
  std::optional<std::vector<ModuleGlobal>> globals;  // resolved at its first selected launch
  bool warned_managed = false;
};

// PTX of a loaded fat binary, decompressed when a recorded kernel is looked up in it.
struct LoadedPtx {
  record::cuda::PtxEntry entry;
  std::optional<std::string> text;
  bool unreadable = false;
};

class CudaRecorder {
 public:
  static CudaRecorder& instance() {
    static auto* r = new CudaRecorder;  // never destroyed: callbacks may come during exit
    return *r;
  }

  void start() {
    output_ = output_path();
    std::string kernels = environment(r3::record::kKernelsVariable);
    selection_text_ = kernels.empty() ? ".*" : kernels;
    try {
      selection_ = std::regex(selection_text_, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      log::error("record (CUDA): kernel selection '", selection_text_,
                 "' is not a valid regex; nothing will be recorded");
      return;
    }
    std::string launches = environment(r3::record::kLaunchesVariable);
    if (!launches.empty()) launches_per_kernel_ = std::strtoul(launches.c_str(), nullptr, 10);
    if (launches_per_kernel_ == 0) launches_per_kernel_ = 1;
    capture_all_ = environment(r3::record::kCaptureVariable) == "all";

    CUpti_SubscriberHandle subscriber;
    if (cuptiSubscribe(&subscriber, &CudaRecorder::callback, this) != CUPTI_SUCCESS) {
      log::error(
          "record (CUDA): cuptiSubscribe failed (another CUPTI tool is attached?); "
          "nothing will be recorded");
      return;
    }
    for (CUpti_CallbackId id : record::cuda::kMemoryCalls)
      cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    for (CUpti_CallbackId id :
         {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData, CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData,
          CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx,
          CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary})
      cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
    active_ = true;
    // Kernel activity from the start, before the application allocates, rather than at the
    // first recorded launch: CUPTI enabling it then changes what lies next to the application's
    // allocations. Rodinia's srad_cuda_1 reads outside its array (compute-sanitizer: 22261
    // invalid reads in a run alone, which never faults); recorded with the activity enabled
    // late, 8 of 22 runs faulted (CUDA_ERROR_ILLEGAL_ADDRESS), with it enabled here 1 of 12
    // (H100, CUDA 13.0). Fewer, not none: such a program stays at the mercy of the layout.
    start_activity();
    // Says what was recorded at exit; when a capture is opened, a later handler closes it first.
    std::atexit([] { instance().finish(); });
  }

  // At exit: close the capture and say what was recorded.
  void finish() {
    std::lock_guard recording(recording_mutex_);
    std::lock_guard lock(mutex_);
    if (finished_ || !active_) return;
    finished_ = true;
    std::size_t recorded = 0, kernels = 0;
    for (const KernelRecord& k : kernels_) {
      recorded += k.distinct.size();
      kernels += k.distinct.empty() ? 0 : 1;
    }
    if (activity_on_) {
      // The application's launches of the recorded kernels, still in CUPTI's buffers.
      if (cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != CUPTI_SUCCESS)
        log::warning(
            "record (CUDA): cuptiActivityFlushAll failed; times in the application "
            "come from events around the recorded launches");
      apply_app_times();
    }
    try {
      if (writer_) writer_->close();
    } catch (const std::exception& e) {
      log::error("record (CUDA): closing ", output_, ": ", e.what());
      ++errors_;
    }
    std::map<std::string, std::uint64_t> launches_seen;
    for (const auto& [handle, function] : functions_)
      launches_seen[function.names.name.empty() ? "(unnamed)" : function.names.name] +=
          function.launches;
    std::string seen;
    for (const auto& [name, n] : launches_seen)
      seen += (seen.empty() ? "" : ", ") + name + " (" + std::to_string(n) + ")";
    if (recorded == 0) {
      log::warning("record (CUDA): no launch was recorded: no kernel matched '", selection_text_,
                   "'; the application launched: ", seen.empty() ? "nothing" : seen);
    } else {
      log::info("record (CUDA): ", recorded, " launch(es) of ", kernels, " kernel(s) written to ",
                output_);
    }
    if (errors_ > 0)
      log::error("record (CUDA): ", errors_.load(),
                 " launch(es) could not be recorded (the messages above say why); the "
                 "application was not affected");
    if (unreadable_code_ > 0)
      log::warning("record (CUDA): ", unreadable_code_.load(),
                   " loaded image(s) or PTX entries could not be read (messages above); kernels "
                   "from them are recorded with their cubin only");
    if (unsupported_managed_ > 0)
      log::warning("record (CUDA): the application allocated managed memory ",
                   unsupported_managed_.load(),
                   " time(s); managed memory is not recorded, and launches that use it do not "
                   "replay");
  }

 private:
  static void CUPTIAPI callback(void* self, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                const void* data) {
    // Our own driver calls are not recorded; but a module that one of them loads lazily (a
    // kernel's first cuKernelGetParamInfo, say) is, or its cubin would be missed.
    static thread_local bool inside = false;
    if (inside && domain != CUPTI_CB_DOMAIN_RESOURCE) return;
    const bool outer = !inside;
    inside = true;
    try {
      auto* r = static_cast<CudaRecorder*>(self);
      if (domain == CUPTI_CB_DOMAIN_RESOURCE)
        r->on_resource(static_cast<const CUpti_ResourceData*>(data));
      else if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
        r->on_driver(id, static_cast<const CUpti_CallbackData*>(data));
    } catch (const std::exception& e) {
      log::error("record (CUDA): ", e.what());
      ++instance().errors_;
    } catch (...) {
      ++instance().errors_;
    }
    if (outer) inside = false;
  }

  void on_resource(const CUpti_ResourceData* data) {
    auto* module = static_cast<const CUpti_ModuleResourceData*>(data->resourceDescriptor);
    if (!module || !module->pCubin || module->cubinSize == 0) return;
    std::lock_guard lock(images_mutex_);
    const auto* bytes = reinterpret_cast<const std::byte*>(module->pCubin);
    cubins_.emplace_back(bytes, bytes + module->cubinSize);
  }

  void on_driver(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
    const bool exit = cb->callbackSite == CUPTI_API_EXIT;
    if (auto event = record::cuda::memory_event(id, cb)) {
      using Kind = record::cuda::MemoryEvent::Kind;
      switch (event->kind) {
        case Kind::allocated: {
          std::lock_guard lock(mutex_);
          allocations_.add(event->address, event->bytes);
          return;
        }
        case Kind::managed: {
          ++unsupported_managed_;
          std::lock_guard lock(mutex_);
          allocations_.add_managed(event->address, event->bytes);
          return;
        }
        case Kind::freed: {
          std::lock_guard lock(mutex_);
          allocations_.remove(event->address);
          return;
        }
      }
    }
    switch (id) {
      // Code as the application hands it over (fat binaries carry the PTX; the loaded cubin
      // comes from the resource callback).
      case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData:
        if (!exit)
          on_code_loaded(static_cast<const cuLibraryLoadData_params*>(cb->functionParams)->code);
        return;
      case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData:
        if (!exit)
          on_code_loaded(static_cast<const cuModuleLoadData_params*>(cb->functionParams)->image);
        return;
      case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx:
        if (!exit)
          on_code_loaded(static_cast<const cuModuleLoadDataEx_params*>(cb->functionParams)->image);
        return;
      case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary:
        if (!exit)
          on_code_loaded(
              static_cast<const cuModuleLoadFatBinary_params*>(cb->functionParams)->fatCubin);
        return;
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
        auto* p = static_cast<const cuLaunchKernel_params*>(cb->functionParams);
        capture::Dim3 grid{p->gridDimX, p->gridDimY, p->gridDimZ};
        capture::Dim3 block{p->blockDimX, p->blockDimY, p->blockDimZ};
        launch(cb, p->f, grid, block, p->sharedMemBytes, p->hStream, p->kernelParams, p->extra);
        return;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
        auto* p = static_cast<const cuLaunchKernelEx_params*>(cb->functionParams);
        const CUlaunchConfig* c = p->config;
        capture::Dim3 grid{c->gridDimX, c->gridDimY, c->gridDimZ};
        capture::Dim3 block{c->blockDimX, c->blockDimY, c->blockDimZ};
        launch(cb, p->f, grid, block, c->sharedMemBytes, c->hStream, p->kernelParams, p->extra);
        return;
      }
      default:
        return;
    }
  }

  // Keeps the PTX of a fat binary or PTX text being loaded. A failure to read it costs only the
  // PTX of its kernels, so it is counted apart from failed recordings.
  void on_code_loaded(const void* code) {
    if (!code) return;
    std::vector<LoadedPtx> found;
    try {
      if (const std::byte* fatbin = record::cuda::find_fatbin(code)) {
        for (auto& entry : record::cuda::fatbin_ptx_entries(fatbin))
          found.push_back({std::move(entry), std::nullopt, false});
      } else if (std::memcmp(code,
                             "\x7f"
                             "ELF",
                             4) != 0) {
        // Neither fat binary nor cubin: NUL-terminated PTX text (cuModuleLoadData's contract).
        std::string text(static_cast<const char*>(code));
        const std::size_t target = text.find(".target sm_");
        if (target == std::string::npos) return;
        LoadedPtx ptx;
        ptx.entry.architecture = std::strtoul(text.c_str() + target + 11, nullptr, 10);
        ptx.entry.text_size = text.size();
        ptx.text = std::move(text);
        found.push_back(std::move(ptx));
      }
    } catch (const std::exception& e) {
      log::warning("record (CUDA): loaded code: ", e.what());
      ++unreadable_code_;
      return;
    }
    std::lock_guard lock(images_mutex_);
    for (auto& ptx : found) ptx_.push_back(std::move(ptx));
  }

  // The PTX that defines `name` for the highest architecture the device runs, as the driver
  // would pick it to JIT; "" when the application loaded none.
  std::string ptx_for(const std::string& name, unsigned device_architecture) {
    std::lock_guard lock(images_mutex_);
    const std::string* best = nullptr;
    unsigned best_architecture = 0;
    for (LoadedPtx& ptx : ptx_) {
      if (ptx.unreadable || ptx.entry.architecture > device_architecture) continue;
      if (!ptx.text) {
        try {
          ptx.text = record::cuda::ptx_text(ptx.entry);
          ptx.entry.payload = {};
        } catch (const std::exception& e) {
          log::warning("record (CUDA): PTX for sm_", ptx.entry.architecture, ": ", e.what());
          ptx.unreadable = true;
          ++unreadable_code_;
          continue;
        }
      }
      if (record::cuda::ptx_defines_entry(*ptx.text, name) &&
          (!best || ptx.entry.architecture > best_architecture)) {
        best = &*ptx.text;
        best_architecture = ptx.entry.architecture;
      }
    }
    return best ? *best : "";
  }

  // The module globals and __constant__ variables of the kernel's module: named by the data
  // objects of its cubin, placed by the driver.
  std::vector<ModuleGlobal> globals_of(CUfunction f, const Names& n) {
    std::vector<ModuleGlobal> globals;
    const bool library_kernel = n.is_library_kernel;
    // From the cubin's data objects, or from the PTX the module was loaded from.
    std::vector<std::string> names;
    if (const std::vector<std::byte>* cubin = cubin_with(n.name)) {
      for (const record::cuda::ElfObject& object : record::cuda::elf_objects(*cubin))
        names.push_back(object.name);
    } else {
      names = record::cuda::ptx_variables(ptx_for(n.name, device_architecture()));
    }
    if (names.empty()) return globals;
    CUmodule module = nullptr;
    CUlibrary library = nullptr;
    if (library_kernel) {
#if CUDA_VERSION >= 12050
      R3_REC_CU(cuKernelGetLibrary(&library, reinterpret_cast<CUkernel>(f)));
#else
      return globals;  // no cuKernelGetLibrary before CUDA 12.5
#endif
    } else {
      R3_REC_CU(cuFuncGetModule(&module, f));
    }
    for (const std::string& name : names) {
      CUdeviceptr address = 0;
      std::size_t size = 0;
      const CUresult rc = library ? cuLibraryGetGlobal(&address, &size, library, name.c_str())
                                  : cuModuleGetGlobal(&address, &size, module, name.c_str());
      if (rc == CUDA_SUCCESS && size > 0) globals.push_back({name, address, size});
    }
    return globals;
  }

  // CUPTI's kernel activity records give each launch's duration on the GPU. They are turned on
  // at the first selected launch, so that a run which selects nothing does not pay for them.
  void start_activity() {
    if (activity_on_ || activity_failed_) return;
    if (cuptiActivityRegisterCallbacks(&record::cuda::request_activity_buffer,
                                       &CudaRecorder::buffer_completed) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
      log::warning(
          "record (CUDA): CUPTI kernel activity records are not available; times in "
          "the application come from events around the recorded launches");
      activity_failed_ = true;
      return;
    }
    activity_on_ = true;
  }

  static void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t,
                                        size_t valid) {
    try {
      instance().take_activity(buffer, valid);
    } catch (...) {
      ++instance().errors_;
    }
    std::free(buffer);
  }

  void take_activity(uint8_t* buffer, std::size_t valid) {
    record::cuda::for_each_kernel_record(buffer, valid, [&](const KernelActivity& k) {
      app_times_.add(
          k.name,
          {capture::Dim3{std::uint32_t(k.gridX), std::uint32_t(k.gridY), std::uint32_t(k.gridZ)},
           capture::Dim3{std::uint32_t(k.blockX), std::uint32_t(k.blockY), std::uint32_t(k.blockZ)},
           double(k.end - k.start) / 1000.0, k.correlationId});
    });
  }

  // Each written launch's time in the application (app_times.hpp). Callers hold
  // recording_mutex_.
  void apply_app_times() {
    const std::size_t timed = app_times_.apply([&](const WrittenLaunch& w) {
      try {
        writer_->set_app_time(w.kernel_id, w.index, w.launch);
        return true;
      } catch (const std::exception& e) {
        log::error("record (CUDA): ", e.what());
        ++errors_;
        return false;
      }
    });
    log::debug("record (CUDA): application times of ", timed,
               " recorded launch(es) from CUPTI kernel activity records");
  }

  static bool ok(const CUpti_CallbackData* cb) {
    return cb->functionReturnValue &&
           *static_cast<const CUresult*>(cb->functionReturnValue) == CUDA_SUCCESS;
  }

  // Says once per kernel that a launch reaches managed memory, which is not recorded (callers
  // hold recording_mutex_).
  void warn_if_managed(std::uint64_t word, KernelRecord& record,
                       const record::cuda::Allocations& allocations) {
    if (record.warned_managed || !allocations.is_managed(word)) return;
    record.warned_managed = true;
    log::warning("record (CUDA): a launch of ", record.kernel.name,
                 " uses managed memory (cudaMallocManaged) at 0x", std::hex, word, std::dec,
                 ", which is not recorded: its recorded launches will not replay");
  }

  // What the recorder knows of a launched function, found once: the names are looked up, the
  // name selection decided, and the launches counted here, so that a launch which is not
  // selected costs a hash lookup (and the Kokkos label check when the connector is loaded).
  struct Function {
    Names names;
    bool selected_by_name = false;
    bool recorded_enough = false;  // its kernel has all the launches --launches asks for
    std::uint64_t launches = 0;
  };

  bool selected_by_name(const Names& n) const {
    return !n.name.empty() &&
           (std::regex_search(n.name, selection_) ||
            (!n.demangled.empty() && std::regex_search(n.demangled, selection_)));
  }

  void launch(const CUpti_CallbackData* cb, CUfunction f, capture::Dim3 grid, capture::Dim3 block,
              unsigned shared, CUstream stream, void** kernel_params, void** extra) {
    if (cb->callbackSite == CUPTI_API_EXIT) {
      finish_launch(cb);
      return;
    }
    const std::string label = kokkos_label();
    const KokkosChoicesFn choices = label.empty() ? nullptr : kokkos_choices_function();
    Names n;
    std::uint64_t sequence = 0;
    {
      std::lock_guard lock(mutex_);
      sequence = sequence_++;
      auto [it, fresh] = functions_.try_emplace(f);
      Function& function = it->second;
      if (fresh) {
        function.names = names_of(f);
        function.selected_by_name = selected_by_name(function.names);
      }
      ++function.launches;
      if (function.recorded_enough) return;
      const bool by_label =
          !label.empty() && !function.names.name.empty() && std::regex_search(label, selection_);
      if (!function.selected_by_name && !by_label) return;
      n = function.names;
      n.label = label;
    }
    std::vector<capture::Param> params = params_of(f, n.is_library_kernel);
    std::vector<std::byte> args;
    if (kernel_params) {
      std::size_t total = 0;
      for (const auto& p : params) total = std::max<std::size_t>(total, p.offset + p.size);
      args.resize(total);
      for (std::size_t i = 0; i < params.size(); ++i)
        std::memcpy(args.data() + params[i].offset, kernel_params[i], params[i].size);
    } else if (extra) {
      void* buffer = nullptr;
      std::size_t size = 0;
      for (void** e = extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
        if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = e[1];
        if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = *static_cast<std::size_t*>(e[1]);
      }
      if (buffer)
        args.assign(static_cast<std::byte*>(buffer), static_cast<std::byte*>(buffer) + size);
    }

    // Only launches of selected kernels that still lack recorded launches get here: every
    // other launch, and every allocation, takes mutex_ alone and never waits for a recording.
    std::unique_lock recording(recording_mutex_);
    std::size_t k = kernel_index(n, params, choices);
    KernelRecord& record = kernels_[k];
    if (!record.globals) record.globals = globals_of(f, n);
    r3::Hasher h;
    h.update(std::as_bytes(std::span(&grid, 1)));
    h.update(std::as_bytes(std::span(&block, 1)));
    h.update(std::as_bytes(std::span(&shared, 1)));
    h.update(args);
    r3::Hash128 key = h.digest();
    if (record.distinct.contains(key) || record.distinct.size() >= launches_per_kernel_) {
      if (record.distinct.size() >= launches_per_kernel_) mark_recorded_enough(f);
      return;
    }

    auto pending = std::make_unique<Pending>();
    pending->name = n.name;
    pending->kernel = k;
    pending->correlation = cb->correlationId;
    pending->launch.sequence = sequence;
    pending->launch.grid = grid;
    pending->launch.block = block;
    pending->launch.shared_memory_bytes = shared;
    pending->launch.stream = reinterpret_cast<std::uint64_t>(stream);
    pending->launch.args = args;
    // The allocations as they are now: the snapshot follows pointers through them without
    // holding mutex_ across its copies.
    record::cuda::Allocations allocations;
    {
      std::lock_guard lock(mutex_);
      allocations = allocations_;
    }
    R3_REC_CU(cuCtxSynchronize());
    snapshot(*pending, record, allocations);
    R3_REC_CU(cuEventCreate(&pending->start, CU_EVENT_DEFAULT));
    R3_REC_CU(cuEventCreate(&pending->stop, CU_EVENT_DEFAULT));
    R3_REC_CU(cuEventRecord(pending->start, stream));
    record.distinct.insert(key);
    if (record.distinct.size() >= launches_per_kernel_) mark_recorded_enough(f);
    {
      std::lock_guard lock(mutex_);
      pending_[cb->correlationId] = std::move(pending);
      ++pending_count_;
    }
    app_times_.time(n.name);
    // Held on until this launch's exit (finish_launch, on this thread): no other recording
    // runs between its snapshot before and its copies after.
    recording.release();
    holds_recording() = true;
  }

  // Whether this thread holds recording_mutex_ from a launch's entry to its exit.
  static bool& holds_recording() {
    static thread_local bool holds = false;
    return holds;
  }

  void mark_recorded_enough(CUfunction f) {
    std::lock_guard lock(mutex_);
    functions_[f].recorded_enough = true;
  }

  std::size_t kernel_index(const Names& n, const std::vector<capture::Param>& params,
                           KokkosChoicesFn choices) {
    for (std::size_t i = 0; i < kernels_.size(); ++i)
      if (kernels_[i].kernel.name == n.name) return i;
    KernelRecord record;
    record.kernel.name = n.name;
    record.kernel.demangled_name = n.demangled == n.name ? "" : n.demangled;
    record.kernel.kokkos_label = n.label;
    record.kernel.kokkos_choices = kokkos_choices(choices, n.label);
    record.kernel.params = params;
    // C types from the demangled signature: they say what the pointed-to memory holds, which
    // sets how replays compare it (floating point within tolerance).
    const std::vector<std::string> types = record::cuda::parameter_types(n.demangled);
    if (types.size() == params.size())
      for (std::size_t i = 0; i < params.size(); ++i) record.kernel.params[i].type = types[i];
    kernels_.push_back(std::move(record));
    return kernels_.size() - 1;
  }

  // The regions before the launch: every allocation an argument points into, then (reachable)
  // every allocation a pointer-sized word of those points into, or every live allocation.
  // Each allocation is named after what reaches it first (what a user can tell apart and set a
  // tolerance for): "arg2" for the third parameter, "arg0+16" for a pointer at byte 16 of a
  // struct passed by value, "*(arg4+8)" for the allocation a pointer at byte 8 of arg4's
  // memory points to, "*(table)" through a module global; "allocation3" for one nothing reaches
  // (--capture all).
  void snapshot(Pending& pending, KernelRecord& record,
                const record::cuda::Allocations& allocations) {
    std::set<std::uint64_t> chosen;
    std::vector<std::uint64_t> queue;
    std::map<std::uint64_t, std::string> names;
    // What a typed pointer parameter says its allocation holds; unknown where two disagree.
    std::map<std::uint64_t, capture::ElementType> element_types;
    auto consider = [&](std::uint64_t word, const std::string& name) {
      auto a = allocations.containing(word);
      if (!a) return;
      names.emplace(a->first, name);
      if (!capture_all_ && chosen.insert(a->first).second) queue.push_back(a->first);
    };
    auto offset_name = [](const std::string& base, std::uint64_t at) {
      return at == 0 ? base : base + "+" + std::to_string(at);
    };
    auto follow_words = [&](const std::vector<std::byte>& bytes, const std::string& parent) {
      if (capture_all_) return;
      for (std::uint64_t at = 0; at + 8 <= bytes.size(); at += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, bytes.data() + at, 8);
        consider(word, "*(" + offset_name(parent, at) + ")");
      }
    };
    // All of the module's globals: which of them the kernel uses is not known here.
    for (const ModuleGlobal& global : *record.globals) {
      PendingRegion region{capture::RegionKind::global, global.name, global.address, global.size,
                           std::vector<std::byte>(global.size)};
      R3_REC_CU(cuMemcpyDtoH(region.before.data(), global.address, global.size));
      follow_words(region.before, global.name);
      pending.regions.push_back(std::move(region));
    }
    // Every aligned word of every parameter: structs passed by value carry pointers too.
    for (std::size_t index = 0; index < record.kernel.params.size(); ++index) {
      capture::Param& p = record.kernel.params[index];
      for (std::uint64_t at = (p.offset + 7) / 8 * 8;
           at + 8 <= p.offset + p.size && at + 8 <= pending.launch.args.size(); at += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, pending.launch.args.data() + at, 8);
        warn_if_managed(word, record, allocations);
        if (auto a = allocations.containing(word); a && p.size == 8) {
          p.is_pointer = true;
          const capture::ElementType type = record::cuda::pointee_element_type(p.type);
          auto [it, fresh] = element_types.emplace(a->first, type);
          if (!fresh && it->second != type) it->second = capture::ElementType::unknown;
        }
        consider(word, offset_name("arg" + std::to_string(index), at - p.offset));
      }
    }
    if (capture_all_) {
      std::size_t unnamed = 0;
      for (const auto& [base, size] : allocations.live()) {
        chosen.insert(base), queue.push_back(base);
        names.emplace(base, "allocation" + std::to_string(unnamed++));
      }
    }
    for (std::size_t i = 0; i < queue.size(); ++i) {
      const std::uint64_t base = queue[i], size = allocations.live().at(base);
      PendingRegion region{capture::RegionKind::allocation, names[base], base, size,
                           std::vector<std::byte>(size)};
      if (auto it = element_types.find(base); it != element_types.end())
        region.element_type = it->second;
      if (size > 0) R3_REC_CU(cuMemcpyDtoH(region.before.data(), base, size));
      follow_words(region.before, region.name);
      pending.regions.push_back(std::move(region));
    }
  }

  void finish_launch(const CUpti_CallbackData* cb) {
    std::unique_lock<std::mutex> recording;
    if (holds_recording()) {
      recording = std::unique_lock(recording_mutex_, std::adopt_lock);
      holds_recording() = false;
    }
    if (pending_count_.load(std::memory_order_acquire) == 0) return;
    std::unique_ptr<Pending> pending;
    {
      std::lock_guard lock(mutex_);
      auto it = pending_.find(cb->correlationId);
      if (it == pending_.end()) return;
      pending = std::move(it->second);
      pending_.erase(it);
      --pending_count_;
    }
    if (!recording.owns_lock()) recording = std::unique_lock(recording_mutex_);
    KernelRecord& record = kernels_[pending->kernel];
    if (!ok(cb)) {
      log::warning("record (CUDA): the launch of ", pending->name,
                   " failed in the application; it is not recorded");
      return;
    }
    R3_REC_CU(cuEventRecord(pending->stop, pending->launch.stream
                                               ? reinterpret_cast<CUstream>(pending->launch.stream)
                                               : nullptr));
    R3_REC_CU(cuCtxSynchronize());
    float ms = 0;
    if (cuEventElapsedTime(&ms, pending->start, pending->stop) == CUDA_SUCCESS)
      pending->launch.app_time_us = ms * 1000.0;
    cuEventDestroy(pending->start);
    cuEventDestroy(pending->stop);

    capture::CaptureWriter& writer = open_writer();
    for (PendingRegion& region : pending->regions) {
      capture::Region r;
      r.kind = region.kind;
      r.name = region.name;
      r.address = region.address;
      r.size = region.size;
      r.element_type = region.element_type;
      r.content = writer.put_content(region.before);
      (region.kind == capture::RegionKind::global ? pending->launch.globals
                                                  : pending->launch.prologue)
          .push_back(r);
      std::vector<std::byte> after(region.size);
      if (region.size > 0) R3_REC_CU(cuMemcpyDtoH(after.data(), region.address, region.size));
      if (after != region.before) {
        r.content = writer.put_content(after);
        pending->launch.epilogue.push_back(r);
      }
    }
    if (!record.id) {
      const std::vector<std::byte>* cubin = cubin_with(record.kernel.name);
      if (cubin)
        record.kernel.images[std::string(capture::kImageCubin)] = writer.put_content(*cubin);
      const std::string ptx = ptx_for(record.kernel.name, device_architecture());
      if (!ptx.empty())
        record.kernel.images[std::string(capture::kImagePtx)] =
            writer.put_content(std::as_bytes(std::span(ptx.data(), ptx.size())));
      if (!cubin && ptx.empty())
        log::warning("record (CUDA): no loaded cubin or PTX holds ", record.kernel.name,
                     "; replays need its source (tune.yaml kernels[].source)");
      else if (ptx.empty())
        log::info("record (CUDA): the application loaded no PTX of ", record.kernel.name,
                  "; it replays on ", "sm_", device_architecture(), " only, or from its source");
      record.id = writer.add_kernel(record.kernel);
    }
    const std::size_t index = writer.add_launch(*record.id, pending->launch);
    app_times_.written({*record.id, index, pending->name, pending->correlation, pending->launch});
    writer.flush();
  }

  // The loaded cubin whose symbol names include `name` (names are NUL-terminated in ELF).
  const std::vector<std::byte>* cubin_with(const std::string& name) {
    std::string needle = std::string(1, '\0') + name + std::string(1, '\0');
    std::lock_guard lock(images_mutex_);
    for (const auto& cubin : cubins_) {
      std::string_view text(reinterpret_cast<const char*>(cubin.data()), cubin.size());
      if (text.find(needle) != std::string_view::npos) return &cubin;
    }
    return nullptr;
  }

  capture::CaptureWriter& open_writer() {
    if (writer_) return *writer_;
    capture::CaptureInfo info;
    info.command_line = this_command_line();
    info.rank = log::rank_from_environment().value_or(-1);
    info.device = device_info();

    writer_ =
        std::make_unique<capture::CaptureWriter>(capture::CaptureWriter::create(output_, info));
    // Registered after HDF5 registered its own handler, so that it runs before HDF5 closes.
    std::atexit([] { instance().finish(); });
    return *writer_;
  }

  // The current device's architecture (90 for sm_90), asked once.
  unsigned device_architecture() {
    if (device_architecture_ == 0) {
      CUdevice device = 0;
      int major = 0, minor = 0;
      R3_REC_CU(cuCtxGetDevice(&device));
      R3_REC_CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
      R3_REC_CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
      device_architecture_ = unsigned(major * 10 + minor);
    }
    return device_architecture_;
  }

  // This process's device, as the replayer reads it too (r3/cuda_device.hpp).
  static capture::DeviceInfo device_info() {
    CUdevice device = 0;
    R3_REC_CU(cuCtxGetDevice(&device));
    CudaDriverAnswers answers;
    answers.attribute = [device](int attribute) {
      int value = 0;
      return cuDeviceGetAttribute(&value, static_cast<CUdevice_attribute>(attribute), device) ==
                     CUDA_SUCCESS
                 ? value
                 : 0;
    };
    char name[256] = {};
    cuDeviceGetName(name, sizeof name, device);
    answers.name = name;
    std::size_t memory = 0;
    if (cuDeviceTotalMem(&memory, device) == CUDA_SUCCESS) answers.memory_bytes = memory;
    cuDriverGetVersion(&answers.driver_version);
    answers.toolkit_version = CUDA_VERSION;
    return cuda_device_info(answers);
  }

  // Lock order: recording_mutex_, then mutex_, then at most one of images_mutex_ and
  // app_times_' own; images_mutex_ and app_times_' are never held together, and neither is held
  // while taking another (on_resource, take_activity and the PTX readers take theirs alone).
  //
  // recording_mutex_ is held while a launch is recorded, from its entry to its exit: its
  // snapshot (cuCtxSynchronize and the device-to-host copies before the launch), the launch,
  // and at its exit the copies after it and the write to the capture. It guards kernels_, writer_,
  // finished_ and what the snapshot reads of a kernel's record. Only a thread launching a selected
  // kernel that still lacks recorded launches takes it, so only such a launch waits for another
  // one's recording.
  //
  // mutex_ is never held across a driver call that synchronises or copies, nor a file write:
  // every launch (its function looked up, counted, and found selected or not), every
  // allocation and free, and every launch's exit (a pending recording looked up) take it alone,
  // briefly. It guards functions_, allocations_, pending_ and sequence_.
  //
  // The Kokkos connector's mutex is taken under recording_mutex_ (kokkos_choices, when a kernel
  // is first recorded); the connector never calls the recorder.
  std::mutex recording_mutex_;
  std::mutex mutex_;
  bool active_ = false, finished_ = false, capture_all_ = false;
  std::string output_, selection_text_;
  std::regex selection_;
  unsigned long launches_per_kernel_ = 1;
  record::cuda::Allocations allocations_;
  // Its own lock: a module may be loaded inside a driver call made while recording_mutex_ is
  // held. A deque,
  // so that a cubin found stays where it is while other modules load.
  std::mutex images_mutex_;
  std::deque<std::vector<std::byte>> cubins_;
  std::deque<LoadedPtx> ptx_;
  bool activity_on_ = false, activity_failed_ = false;  // set in start(), before any launch
  record::cuda::AppTimes app_times_;                    // its own mutex, taken last
  unsigned device_architecture_ = 0;  // 90 for sm_90
  std::vector<KernelRecord> kernels_;
  std::map<std::uint32_t, std::unique_ptr<Pending>> pending_;  // by CUPTI correlation id
  std::unordered_map<CUfunction, Function> functions_;
  std::uint64_t sequence_ = 0;
  std::unique_ptr<capture::CaptureWriter> writer_;
  // Counted from any thread without a lock, reported at the end.
  std::atomic<std::uint64_t> errors_{0}, unsupported_managed_{0}, unreadable_code_{0};
  std::atomic<std::size_t> pending_count_{0};  // pending_.size(), read without the lock
};

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  try {
    if (!recording_requested()) return 1;
    CudaRecorder::instance().start();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "r3: record (CUDA): cannot start: %s\n", e.what());
  } catch (...) {
  }
  return 1;
}
