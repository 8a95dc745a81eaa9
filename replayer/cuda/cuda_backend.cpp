#include "cuda_backend.hpp"

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>

#include "device_memory.hpp"
#include "driver.hpp"
#include "gpu_compare.hpp"
#include "launch_shape.hpp"
#include "nvrtc_compiler.hpp"
#include "owned.hpp"
#include "r3/config.hpp"
#include "r3/elf.hpp"
#include "r3/log.hpp"
#include "r3/replay/kokkos_policy.hpp"
#include "recorded.hpp"
#include "second_input.hpp"
#include "translate.hpp"
#include "verify.hpp"

#if R3_HAVE_LLVM
#include "r3/compiler/cuda_compiler.hpp"
#include "r3/elapsed.hpp"
#endif

namespace r3::replay {
namespace {

using cuda::CudaError;
using cuda::Device;
using cuda::driver;

// A content the replay restores from or compares with: always on the host, and on the device
// too unless device memory ran short.
struct Copy {
  Bytes host;
  CUdeviceptr device = 0;
  std::uint64_t device_hash = 0;  // GpuCompare::keyed_hash of `device` as uploaded
};

struct PreparedRegion {
  capture::Region recorded;
  std::shared_ptr<Copy> before;  // prologue; null if the launch did not read it
  std::shared_ptr<Copy> after;   // epilogue; null when the launch left the region unchanged
};

// A launch's second input (second_input.hpp), region by region: what each region holds before
// the launch (moved, or as recorded), and what the application's own code leaves there. Copies
// like the recorded contents (on the device where it has room, keyed-hashed against a kernel
// that changes them), so a candidate is judged on it without leaving the GPU.
struct SecondInput {
  std::vector<std::shared_ptr<Copy>> before;    // null where the launch did not read the region
  std::vector<std::shared_ptr<Copy>> expected;  // null where the recorded code has no such global
  std::vector<SecondInputReference> references;
};

struct PreparedLaunch {
  std::size_t index = 0;
  capture::Launch shape;        // grid, block and dynamic shared memory (no regions)
  std::vector<std::byte> args;  // relocated
  std::vector<PreparedRegion> regions;
  std::optional<SecondInput> second;  // none without floating-point regions it reads
  // A Kokkos MDRange kernel's policy in the parameters: a variant's block is its tile.
  std::optional<MDRangeTiling> kokkos_tiling;
  // A Kokkos TeamPolicy ParallelFor's closure: a variant's block is (vector length, team size).
  std::optional<TeamShape> kokkos_team;
};

// What a compiled variant is: a cubin for this device, the kernel's name in it, and the launch
// shape the variant asks for.
struct CudaCode {
  Hash128 key;
  std::string cubin;
  std::string function;
  std::optional<capture::Dim3> block;
  bool keep_grid = false;
};

// A variable of a variant's module, with its value as loaded.
struct ModuleVariable {
  std::string name;
  CUdeviceptr address = 0;
  std::shared_ptr<const std::vector<std::byte>> initial;
};

struct Loaded {
  // Shared: a run holds its module while the cache may let it go; the last owner unloads it.
  std::shared_ptr<cuda::Module> module;
  CUfunction function = nullptr;
  LaunchLimits limits;  // of this device and this function
  // Every __device__/__constant__ variable of the module: those the capture does not record
  // are put back to their initial values before every run, so that no run can keep a result
  // for the next one in them (docs/security.md).
  std::vector<ModuleVariable> variables;
  bool variables_read = false;  // on the thread that runs it (compile threads do not copy)
};

// What build() made of a variant before it is loaded: a cubin, or PTX for the driver's JIT.
struct Image {
  bool ok = false;
  std::string diagnostics;
  std::string bytes;
  bool ptx = false;
  std::string function;
};

std::string jit_log(const char* error_log, const char* info_log) {
  std::string out = error_log;
  if (*info_log) out += (out.empty() ? "" : "\n") + std::string(info_log);
  return out;
}

class CudaBackend final : public Backend {
 public:
  CudaBackend() : device_(Device::instance()) {}
  ~CudaBackend() override {
    try {
      // The members (modules, stream, events, buffers) are released after this, in this context.
      if (!device_.lost()) device_.make_current();
      release_copies();
    } catch (...) {  // never throw from a destructor; the context may be gone
    }
  }

  std::string_view name() const override { return "cuda"; }
  AddressMode address_mode() const override { return memory_.map().mode(); }
  std::string placement() const override {
    return memory_.map().describe() + " on " + device_.name() +
           (short_of_memory_ ? ", restored from host memory" : "");
  }

  void prepare(const capture::CaptureReader& capture, std::size_t kernel_index,
               std::vector<std::size_t> launches) override {
    require_backend(capture, "cuda", "the CUDA backend replays captures recorded on a GPU");
    const capture::Kernel& kernel = capture.kernels().at(kernel_index);
    launches = resolve_launches(kernel, std::move(launches));
    kernel_name_ = kernel.name;
    instance_name_ = kernel.demangled_name.empty() ? "" : capture::instance_name(kernel.demangled_name);
    demangled_name_ = kernel.demangled_name;
    recorded_source_ = recorded_image(capture, kernel, capture::kImageSource);
    recorded_ptx_ = recorded_image(capture, kernel, capture::kImagePtx);
    recorded_cubin_ = recorded_image(capture, kernel, capture::kImageCubin);
    recorded_architecture_ = capture.info().device.architecture;

    const auto started = Clock::now();
    device_.make_current();
    const double context_s = seconds_since(started);
    release_copies();
    // On the device every region must be mapped (its pristine copy stays on the host when the
    // device is short); on the host its contents are kept before and after.
    std::size_t free = 0, total = 0;
    R3_CU(driver().cuMemGetInfo(&free, &total));
    check_fits_in_memory(capture, kernel, launches, free, "device memory of " + device_.name(), 1);
    check_fits_in_memory(capture, kernel, launches, available_host_memory(), "host memory", 2);
    memory_.place(region_spans(kernel, launches, capture::RegionKind::allocation));
    unrecorded_ = unrecorded_spans(kernel, launches, memory_.map());
    prepared_.clear();
    recorded_variables_.clear();
    RelocatedContents contents(capture, memory_.map());
    std::map<std::pair<Hash128, std::uint64_t>, std::shared_ptr<Copy>> copies;
    auto copy = [&](const capture::Region& region) {
      auto key = std::make_pair(region.content, region.address);
      auto& slot = copies[key];
      if (!slot) slot = std::make_shared<Copy>(Copy{contents.get(region), 0});
      return slot;
    };
    for (std::size_t index : launches) {
      const capture::Launch& launch = kernel.launches[index];
      PreparedLaunch prepared;
      prepared.index = index;
      prepared.shape.grid = launch.grid;
      prepared.shape.block = launch.block;
      prepared.shape.shared_memory_bytes = launch.shared_memory_bytes;
      prepared.args = launch.args;
      memory_.map().relocate_arguments(prepared.args, kernel.params);
      if (!kernel.kokkos_label.empty()) {
        prepared.kokkos_tiling = find_mdrange_tiling(prepared.args, launch.block, launch.grid);
        if (is_team_parallel_for(kernel.demangled_name))
          prepared.kokkos_team =
              find_team_shape(prepared.args, launch.block, launch.grid, launch.shared_memory_bytes);
      }
      for (const RegionStates& state : region_states(launch)) {
        prepared.regions.push_back({*state.region, state.before ? copy(*state.before) : nullptr,
                                    state.after ? copy(*state.after) : nullptr});
        if (state.region->kind != capture::RegionKind::allocation)
          recorded_variables_.insert(state.region->name);
      }
      prepared_.push_back(std::move(prepared));
    }
    copies_.clear();
    for (auto& [key, c] : copies) copies_.push_back(c);
    const double placed_s = seconds_since(started);
    upload_copies();
    log::debug("CUDA prepare of ", kernel_name_, ": context ", context_s, " s, memory placed and read ",
               placed_s - context_s, " s, uploaded ", seconds_since(started) - placed_s, " s");
    cache_.clear();
    {
      std::lock_guard lock(loaded_mutex_);
      loaded_.clear();
    }
    prepare_second_inputs();
  }

  Compiled compile(const Variant& variant) override { return compile_from(variant, nullptr); }

  std::string translation_context() const override { return cuda::encode(facts()); }
  // NVRTC only: it holds one lock for all the compiles of a process, so it scales in worker
  // processes alone; Clang/NVPTX scales on the pool's threads (7x with 8 on an H100 node), where
  // a worker process would pay LLVM's start-up again.
  bool translates(const Variant& variant) const override {
    return variant.compiler == replay::Compiler::nvrtc && cuda::from_source(facts(), variant);
  }
  Compiled compile_translated(const Variant& variant, Translation translation) override {
    return compile_from(variant, &translation);
  }

  RunResult run(const Compiled& compiled, const RunOptions& options) override {
    if (auto failed = not_compiled(compiled)) return *failed;
    launched_ = false;
    RunResult result = run_once(compiled, options);
    if (result.outcome != Outcome::ok && launched_ && !device_.lost()) {
      // Whatever a failed candidate left behind, the next one starts from what was recorded.
      try {
        refresh();
      } catch (const Error& e) {
        result.message += " (and the replay could not be reset after it: " + e.message() + ")";
      }
    }
    return result;
  }

  bool lost() const override { return device_.lost(); }

  std::optional<LoadableCode> loadable_code(const Compiled& compiled) const override {
    if (!compiled.ok || !compiled.code) return std::nullopt;
    auto code = std::static_pointer_cast<const CudaCode>(compiled.code);
    return LoadableCode{
        code->cubin, code->function, device_.architecture(),
        std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10)};
  }

 private:
  // Compiles a variant, or takes it from the cache; `translated`: its code made elsewhere (a
  // compile worker), which is only loaded here.
  Compiled compile_from(const Variant& variant, Translation* translated) {
    device_.make_current();
    const Hash128 key = cache_key(variant);
    if (auto cached = cache_.find(key)) return *cached;
    const auto start = Clock::now();
    const double translation_seconds = translated ? translated->seconds : 0;
    Compiled compiled;
    compiled.key = key;
    cuda::CudaFlags flags = cuda::split_flags(variant.flags);
    Image image = translated ? image_of(std::move(*translated)) : build(variant, flags);
    if (image.ok && image.ptx) image = link_ptx(std::move(image), flags.jit);
    if (!image.ok) {
      compiled.diagnostics = image.diagnostics;
    } else {
      auto code =
          std::make_shared<CudaCode>(
              CudaCode{key, image.bytes, image.function, variant.block, variant.keep_grid});
      std::string why;
      Loaded loaded = load(*code, why);
      if (!why.empty()) {
        compiled.diagnostics = why;
      } else {
        compiled.ok = true;
        compiled.diagnostics = image.diagnostics;
        compiled.resources = resources(loaded.function, code->cubin.size());
        compiled.code = code;
        remember(key, loaded);
      }
    }
    compiled.seconds = seconds_since(start) + translation_seconds;
    cache_.put(key, compiled);
    return compiled;
  }

  RunResult run_once(const Compiled& compiled, const RunOptions& options) {
    RunResult result;
    auto code = std::static_pointer_cast<const CudaCode>(compiled.code);
    std::size_t current = 0;
    try {
      device_.make_current();
      ensure_stream();
      Loaded loaded = loaded_for(*code);
      if (!loaded.variables_read) {
        loaded.variables = module_variables(loaded.module->get(), code->cubin);
        loaded.variables_read = true;
        remember(code->key, loaded);
      }
      for (const PreparedLaunch& launch : prepared_) {
        current = launch.index;
        LaunchResult launch_result;
        launch_result.launch = launch.index;
        std::string why;
        const LaunchShape shape = variant_shape(launch, *code, why);
        if (why.empty()) why = check_shape(shape, loaded.limits);
        if (!why.empty()) {
          result.outcome = Outcome::launch_error;
          result.message = "launch " + std::to_string(launch.index) + ": " + why;
          return result;
        }
        prepare_function(loaded.function, shape);
        launched_ = true;
        restore(launch, loaded, /*all=*/true);
        launch_kernel(loaded.function, shape, launch);
        R3_CU(driver().cuStreamSynchronize(stream_.get()));
        if (!verify(launch, loaded, options, launch_result)) {
          result.outcome = Outcome::wrong_result;
          result.message =
              "launch " + std::to_string(launch.index) + ": " + first_failure(launch_result);
          result.launches.push_back(std::move(launch_result));
          return result;
        }
        if (launch.second) {
          LaunchResult second;
          second.launch = launch.index;
          if (!verify_second_input(launch, loaded, shape, options, second)) {
            result.outcome = Outcome::wrong_result;
            result.message = failed_on_second_input(launch.index, first_failure(second));
            result.launches.push_back(std::move(second));
            return result;
          }
          launch_result.verify_seconds += second.verify_seconds;
        }
        time(launch, loaded, shape, options, launch_result);
        if (!options.verify_after_timing) check_reference_copies();  // the timed runs' too
        if (options.verify_after_timing && options.repeats > 0 &&
            !verify(launch, loaded, options, launch_result)) {
          result.outcome = Outcome::wrong_result;
          result.message =
              "launch " + std::to_string(launch.index) +
              " (verified again after the timed runs): " + first_failure(launch_result);
          result.launches.push_back(std::move(launch_result));
          return result;
        }
        result.seconds += launch_result.time.median;
        result.launches.push_back(std::move(launch_result));
      }
    } catch (const CudaError& e) {
      result.outcome = Outcome::launch_error;
      result.message = "launch " + std::to_string(current) + ": " + e.message();
      if (e.sticky()) {
        // CUDA cannot make a new context in this process: the sandbox replaces the process.
        device_.mark_lost(e.message());
        result.message += " (this process's CUDA context is lost; the sandbox restarts it)";
      }
    } catch (const Error& e) {
      result.outcome = Outcome::launch_error;
      result.message = "launch " + std::to_string(current) + ": " + e.message();
    }
    return result;
  }

  // Puts back every pristine copy on the device from the host copies (which no kernel can
  // reach), the zeros too, and zeroes the mapped bytes no region covers: a candidate that wrote
  // out of bounds may have hit any of them, and the next one must start from what was recorded.
  // (Read-only device mappings for the copies were tried: on an H100 with CUDA 13, copies into a
  // VMM range whose access had been changed failed now and then with "unspecified launch
  // failure", so the copies are healed instead of protected.)
  void refresh() {
    const cuda::Driver& d = driver();
    // (Not cuCtxSynchronize: through cuGetProcAddress with CUDA 13 it resolves to the _v2 entry
    // point, which takes a context argument, and fails with CONTEXT_IS_DESTROYED.)
    if (stream_) R3_CU(d.cuStreamSynchronize(stream_.get()));
    for (auto& c : copies_) {
      if (c->device) R3_CU(d.cuMemcpyHtoD(c->device, c->host->data(), c->host->size()));
    }
    if (zeros_) R3_CU(d.cuMemsetD8(zeros_, 0, zeros_bytes_));
    for (const UnrecordedSpan& span : unrecorded_)
      R3_CU(d.cuMemsetD8(memory_.live(span.address), 0, span.size));
  }

  Hash128 cache_key(const Variant& variant) const {
    Hasher hasher;
    hasher.update_field(variant.key().hex()).update_field(device_.architecture());
    hasher.update_field(kernel_name_);
    if (variant.source_text.empty()) {
      hasher.update_field(recorded_source_).update_field(recorded_ptx_);
      hasher.update_field(recorded_cubin_);
    }
    return hasher.digest();
  }

  // The variant's code before it is loaded: NVRTC and the recorded cubin give a cubin, Clang
  // and the recorded PTX give PTX.
  Image build(const Variant& variant, const cuda::CudaFlags& flags) const {
    Image image;
    const std::string entry = variant.entry.empty() ? kernel_name_ : variant.entry;
    const std::string& text = variant.source_text.empty() ? recorded_source_ : variant.source_text;
    if (variant.compiler == replay::Compiler::recorded || text.empty()) {
      if (!flags.error.empty()) {
        image.diagnostics = flags.error;
        return image;
      }
      const bool jit_asked = flags.jit.opt_level || flags.jit.max_registers || flags.jit.cache_mode;
      const bool cubin_fits = !recorded_cubin_.empty() &&
                              recorded_architecture_ == device_.architecture() && !jit_asked;
      image.function = kernel_name_;  // the recorded code knows it by its own name
      if (cubin_fits) {
        image.bytes = recorded_cubin_;
      } else if (!recorded_ptx_.empty()) {
        image.bytes = recorded_ptx_;
        image.ptx = true;
      } else {
        image.diagnostics =
            "the capture holds no code for kernel '" + kernel_name_ + "' that runs on " +
            device_.architecture() +
            (recorded_cubin_.empty() ? "" : " (its cubin is for " + recorded_architecture_ + ")") +
            ": give the variant's source (r3 replay --source FILE)";
        return image;
      }
      image.ok = true;
      return image;
    }
    return image_of(cuda::translate_source(facts(), variant, flags));
  }

  static Image image_of(Translation t) {
    return Image{t.ok, std::move(t.diagnostics), std::move(t.bytes), t.ptx, std::move(t.function)};
  }

  cuda::KernelFacts facts() const {
    return cuda::KernelFacts{kernel_name_, instance_name_, demangled_name_, recorded_source_,
                             device_.compute_capability(), device_.architecture()};
  }

  // PTX through the driver's JIT (with the variant's ptxas settings) into a cubin for this GPU.
  Image link_ptx(Image image, const cuda::JitSettings& jit) const {
    char error_log[8192] = {};
    char info_log[8192] = {};
    std::vector<CUjit_option> keys = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                                      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    std::vector<void*> values = {error_log, reinterpret_cast<void*>(sizeof error_log), info_log,
                                 reinterpret_cast<void*>(sizeof info_log)};
    if (jit.opt_level) {
      keys.push_back(CU_JIT_OPTIMIZATION_LEVEL);
      values.push_back(reinterpret_cast<void*>(static_cast<std::uintptr_t>(*jit.opt_level)));
    }
    if (jit.max_registers) {
      keys.push_back(CU_JIT_MAX_REGISTERS);
      values.push_back(reinterpret_cast<void*>(static_cast<std::uintptr_t>(*jit.max_registers)));
    }
    if (jit.cache_mode) {
      keys.push_back(CU_JIT_CACHE_MODE);
      values.push_back(reinterpret_cast<void*>(static_cast<std::uintptr_t>(
          *jit.cache_mode == "ca" ? CU_JIT_CACHE_OPTION_CA : CU_JIT_CACHE_OPTION_CG)));
    }
    const cuda::Driver& d = driver();
    CUlinkState state = nullptr;
    R3_CU(d.cuLinkCreate(static_cast<unsigned>(keys.size()), keys.data(), values.data(), &state));
    CUresult status = d.cuLinkAddData(state, CU_JIT_INPUT_PTX, image.bytes.data(),
                                      image.bytes.size(), "variant.ptx", 0, nullptr, nullptr);
    void* cubin = nullptr;
    std::size_t size = 0;
    if (status == CUDA_SUCCESS) status = d.cuLinkComplete(state, &cubin, &size);
    if (status == CUDA_SUCCESS) {
      image.bytes.assign(static_cast<const char*>(cubin), size);
      image.ptx = false;
      std::string log = jit_log(error_log, info_log);
      if (!log.empty()) image.diagnostics += (image.diagnostics.empty() ? "" : "\n") + log;
    } else {
      image.ok = false;
      image.diagnostics += (image.diagnostics.empty() ? "" : "\n") + std::string("ptxas (JIT): ") +
                           cuda::describe(status) + "\n" + jit_log(error_log, info_log);
    }
    d.cuLinkDestroy(state);
    return image;
  }

  // Loads a cubin into the current context; `why` says what failed (a result, not an error).
  Loaded load(const CudaCode& code, std::string& why) const {
    Loaded loaded;
    CUmodule raw = nullptr;
    char error_log[8192] = {};
    CUjit_option keys[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {error_log, reinterpret_cast<void*>(sizeof error_log)};
    const cuda::Driver& d = driver();
    CUresult status = d.cuModuleLoadDataEx(&raw, code.cubin.data(), 2, keys, values);
    if (status != CUDA_SUCCESS) {
      why = "cuModuleLoadDataEx: " + cuda::describe(status) + (*error_log ? "\n" : "") + error_log;
      return loaded;
    }
    loaded.module = std::make_shared<cuda::Module>(raw);
    status = d.cuModuleGetFunction(&loaded.function, raw, code.function.c_str());
    if (status != CUDA_SUCCESS) {
      loaded.module.reset();
      why = "the compiled code has no kernel '" + code.function + "' (" + cuda::describe(status) +
            "); name it with the variant's entry";
      return loaded;
    }
    loaded.limits = limits(loaded.function);
    return loaded;
  }

  // The module's variables and their values as loaded (a module whose image cannot be read as
  // ELF has none that r3 could name).
  std::vector<ModuleVariable> module_variables(CUmodule module, const std::string& cubin) const {
    std::vector<ModuleVariable> variables;
    std::vector<ElfObject> objects;
    try {
      objects = elf_objects(std::as_bytes(std::span(cubin.data(), cubin.size())));
    } catch (const Error&) {
      return variables;
    }
    const cuda::Driver& d = driver();
    for (const ElfObject& object : objects) {
      if (recorded_variables_.contains(object.name)) continue;  // restored as a region
      CUdeviceptr address = 0;
      std::size_t size = 0;
      if (d.cuModuleGetGlobal(&address, &size, module, object.name.c_str()) != CUDA_SUCCESS ||
          size == 0)
        continue;
      auto initial = std::make_shared<std::vector<std::byte>>(size);
      R3_CU(d.cuMemcpyDtoH(initial->data(), address, size));
      variables.push_back({object.name, address, std::move(initial)});
    }
    return variables;
  }

  // The variant's module (loaded again if it was compiled by another backend object).
  Loaded loaded_for(const CudaCode& code) {
    {
      std::lock_guard lock(loaded_mutex_);
      if (auto it = loaded_.find(code.key); it != loaded_.end()) {
        it->second.last_use = ++uses_;
        return it->second.loaded;
      }
    }
    std::string why;
    Loaded loaded = load(code, why);
    if (!why.empty()) throw Error(why);
    remember(code.key, loaded);
    return loaded;
  }

  // Keeps a loaded module for the runs to come, at most kLoadedModules of them: the least
  // recently used one goes (unloaded once no run holds it), and is loaded again if asked for.
  void remember(const Hash128& key, const Loaded& loaded) {
    std::lock_guard lock(loaded_mutex_);
    loaded_[key] = {loaded, ++uses_};
    while (loaded_.size() > kLoadedModules) {
      auto oldest = loaded_.begin();
      for (auto it = loaded_.begin(); it != loaded_.end(); ++it)
        if (it->second.last_use < oldest->second.last_use) oldest = it;
      loaded_.erase(oldest);
    }
  }

  Resources resources(CUfunction function, std::size_t code_bytes) const {
    Resources r;
    const cuda::Driver& d = driver();
    d.cuFuncGetAttribute(&r.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, function);
    d.cuFuncGetAttribute(&r.spilled_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, function);
    d.cuFuncGetAttribute(&r.shared_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function);
    d.cuFuncGetAttribute(&r.max_threads_per_block, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                         function);
    r.code_bytes = code_bytes;
    return r;
  }

  LaunchLimits limits(CUfunction function) const {
    LaunchLimits l;
    auto device = [&](CUdevice_attribute a) {
      return static_cast<std::uint32_t>(device_.attribute(a));
    };
    auto of_function = [&](CUfunction_attribute a) {
      int value = 0;
      R3_CU(driver().cuFuncGetAttribute(&value, a, function));
      return value;
    };
    l.max_threads_per_block = device(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    l.function_max_threads =
        static_cast<std::uint32_t>(of_function(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
    l.max_block = {device(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
                   device(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                   device(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)};
    l.max_grid = {device(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
                  device(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                  device(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)};
    l.max_shared_bytes = device(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    l.static_shared_bytes =
        static_cast<std::uint64_t>(of_function(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
    l.registers = of_function(CU_FUNC_ATTRIBUTE_NUM_REGS);
    return l;
  }

  // How a variant launches a recorded launch: its block with the grid derived (launch_shape.hpp),
  // or, for a Kokkos kernel, as Kokkos would launch that block: an MDRange kernel's block as the
  // tile, with the grid and the closure for it; a TeamPolicy kernel's as (vector length, team
  // size), one block per team, with the closure and shared memory for it. `why`: set when the
  // block is no launch the application could make: a block apart from what the closure holds is
  // not what Kokkos runs.
  static LaunchShape variant_shape(const PreparedLaunch& launch, const CudaCode& code,
                                   std::string& why) {
    if (launch.kokkos_tiling && code.block) {
      if (auto retiled = retile(launch.args, *launch.kokkos_tiling, *code.block))
        return kokkos_shape(launch, std::move(*retiled));
      why = "block " + to_string(*code.block) + " is no tile of this rank-" +
            std::to_string(launch.kokkos_tiling->tile.size()) +
            " Kokkos MDRange kernel (Kokkos launches a tile as the block; z at most 64)";
    } else if (launch.kokkos_team && code.block && !(*code.block == launch.shape.block)) {
      if (auto reshaped = reshape_team(launch.args, *launch.kokkos_team, *code.block))
        return kokkos_shape(launch, std::move(*reshaped));
      why = "block " + to_string(*code.block) + " is no team shape of this Kokkos TeamPolicy " +
            "kernel" +
            (launch.kokkos_team->uses_scratch
                 ? " (its teams use scratch memory, which a new team size would share out anew)"
                 : " (Kokkos launches (vector length, team size, 1): a vector length that is a "
                   "power of two up to 32, at most 1024 threads)");
    }
    return derive_shape(launch.shape, code.block, code.keep_grid);
  }

  static LaunchShape kokkos_shape(const PreparedLaunch& launch, Retiled retiled) {
    LaunchShape shape{retiled.grid,
                      retiled.block,
                      retiled.dynamic_shared_bytes.value_or(launch.shape.shared_memory_bytes),
                      {}};
    shape.args = std::move(retiled.args);
    return shape;
  }

  static void prepare_function(CUfunction function, const LaunchShape& shape) {
    // Above 48 KiB a kernel must opt in to its dynamic shared memory.
    if (shape.dynamic_shared_bytes > 48 * 1024) {
      R3_CU(driver().cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        static_cast<int>(shape.dynamic_shared_bytes)));
    }
  }

  void launch_kernel(CUfunction function, const LaunchShape& shape,
                     const PreparedLaunch& launch) const {
    // The recorded parameter buffer is passed as it was launched (or as the shape changes it).
    const std::vector<std::byte>& args = shape.args.empty() ? launch.args : shape.args;
    std::size_t size = args.size();
    void* buffer = const_cast<std::byte*>(args.data());
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    R3_CU(driver().cuLaunchKernel(function, shape.grid.x, shape.grid.y, shape.grid.z, shape.block.x,
                                  shape.block.y, shape.block.z, shape.dynamic_shared_bytes, stream_.get(),
                                  nullptr, size > 0 ? extra : nullptr));
  }

  // Where a region lives for this module: allocations where they were placed, globals in the
  // module (each variant's module has its own).
  // 0 for a module global the variant's code does not have, when the recorded launch left it
  // unchanged: code that lacks it cannot read it (the recorded module may hold globals the
  // variant does not use, such as the math library's __cudart_sin_cos_coeffs table).
  CUdeviceptr live(const PreparedRegion& prepared, const Loaded& loaded) const {
    const capture::Region& region = prepared.recorded;
    if (region.kind == capture::RegionKind::allocation) return memory_.live(region.address);
    CUdeviceptr address = 0;
    std::size_t size = 0;
    CUresult status =
        driver().cuModuleGetGlobal(&address, &size, loaded.module->get(), region.name.c_str());
    if (status == CUDA_SUCCESS && size >= region.size) return address;
    if (!prepared.after) return 0;
    throw Error("the compiled code has no global '" + region.name + "' of " +
                std::to_string(region.size) + " bytes, which the recorded launch changed");
  }

  // Puts back what the launch's regions held before it (all of them, or those it changes), as
  // recorded or, with `second`, as on its second input.
  void restore(const PreparedLaunch& launch, const Loaded& loaded, bool all,
               bool second = false) const {
    const cuda::Driver& d = driver();
    for (const ModuleVariable& variable : loaded.variables)
      R3_CU(d.cuMemcpyHtoDAsync(variable.address, variable.initial->data(),
                                variable.initial->size(), stream_.get()));
    for (std::size_t r = 0; r < launch.regions.size(); ++r) {
      const PreparedRegion& region = launch.regions[r];
      const std::shared_ptr<Copy>& copy = second ? launch.second->before[r] : region.before;
      if (!copy || (!all && !region.after)) continue;
      CUdeviceptr target = live(region, loaded);
      if (target == 0) continue;  // a global this code does not have
      const Copy& before = *copy;
      // From pageable host memory the copy is staged, so it is ordered on the stream too.
      if (before.device)
        R3_CU(d.cuMemcpyDtoDAsync(target, before.device, before.host->size(), stream_.get()));
      else
        R3_CU(d.cuMemcpyHtoDAsync(target, before.host->data(), before.host->size(), stream_.get()));
    }
  }

  bool verify(const PreparedLaunch& launch, const Loaded& loaded, const RunOptions& options,
              LaunchResult& out) {
    bool passed = verify_regions(
        launch.regions, options, out,
        [&](const PreparedRegion& region, bool changes, const replay::Tolerance& tolerance,
            capture::ElementType type) {
          const CUdeviceptr target = live(region, loaded);
          if (target == 0) {  // a global this code does not have: nothing it can change
            RegionCheck absent;
            absent.tolerance = "not in this code";
            return absent;
          }
          return compare(target, changes ? *region.after : *region.before,
                         changes ? region.before.get() : nullptr, type, tolerance);
        });
    const bool clean = check_unrecorded(out);
    check_reference_copies();
    return clean && passed;
  }

  // Runs the candidate on the launch's second input and compares what it leaves with what the
  // application's code left there (check_on_second_input), and the unrecorded bytes with zero
  // (a write out of bounds there is its own, not the next candidate's). Puts the recorded
  // contents back for the timed runs.
  bool verify_second_input(const PreparedLaunch& launch, const Loaded& loaded,
                           const LaunchShape& shape, const RunOptions& options, LaunchResult& out) {
    const auto start = Clock::now();
    const SecondInput& second = *launch.second;
    restore(launch, loaded, /*all=*/true, /*second=*/true);
    launch_kernel(loaded.function, shape, launch);
    bool passed = true;
    for (std::size_t r = 0; r < launch.regions.size(); ++r) {
      const PreparedRegion& region = launch.regions[r];
      const CUdeviceptr target = live(region, loaded);
      if (target == 0 || !second.expected[r]) continue;
      const Copy& expected = *second.expected[r];
      const SecondInputReference& reference = second.references[r];
      const SecondInputRule rule =
          second_input_rule(reference, *expected.host, region.recorded, options);
      RegionCheck check =
          compare(target, expected, reference.changes ? second.before[r].get() : nullptr, rule.type,
                  rule.tolerance);
      label_second_input_check(check, region.recorded, reference);
      passed = passed && check.passed;
      out.regions.push_back(std::move(check));
    }
    out.verified = passed;
    passed = check_unrecorded(out) && passed;
    check_reference_copies();
    restore(launch, loaded, /*all=*/true);
    out.verify_seconds = seconds_since(start);
    return passed;
  }

  // The second input of each prepared launch that reads floating-point data, and what the
  // application's own code (the recorded cubin at the recorded shape) leaves on it. Where that
  // code cannot run on it, launches are verified on the recording alone, with a warning.
  void prepare_second_inputs() {
    bool any = false;
    std::uint64_t bytes = 0;
    const std::size_t first_second_input_copy = copies_.size();
    for (PreparedLaunch& launch : prepared_) {
      std::vector<RegionBefore> regions;
      for (const PreparedRegion& region : launch.regions)
        regions.push_back({region.before ? region.before->host : nullptr,
                           region.recorded.element_type, region.recorded.size});
      const MovedContents moved = moved_contents(launch.index, regions);
      if (moved.regions.empty()) continue;
      SecondInput second;
      for (std::size_t r = 0; r < launch.regions.size(); ++r)
        second.before.push_back(moved.regions[r] ? add_copy(moved.regions[r])
                                                 : launch.regions[r].before);
      second.expected.resize(launch.regions.size());
      second.references.resize(launch.regions.size());
      launch.second = std::move(second);
      bytes += moved.bytes;
      any = true;
    }
    if (!any) return;
    auto drop = [&](const std::string& why) {
      for (PreparedLaunch& launch : prepared_) launch.second.reset();
      drop_copies_from(first_second_input_copy);
      warn_no_second_input(kernel_name_, why);
    };
    if (std::string why = second_input_memory_short(bytes); !why.empty()) return drop(why);
    Variant recorded;
    recorded.compiler = replay::Compiler::recorded;
    const Compiled reference = compile_from(recorded, nullptr);
    if (!reference.ok) return drop("the recorded code does not load: " + reference.diagnostics);
    auto code = std::static_pointer_cast<const CudaCode>(reference.code);
    try {
      ensure_stream();
      Loaded loaded = loaded_for(*code);
      loaded.variables = module_variables(loaded.module->get(), code->cubin);
      for (PreparedLaunch& launch : prepared_) {
        if (!launch.second) continue;
        std::string why;  // the recorded code's shape: always one the application made
        const LaunchShape shape = variant_shape(launch, *code, why);
        prepare_function(loaded.function, shape);
        restore(launch, loaded, /*all=*/true, /*second=*/true);
        launch_kernel(loaded.function, shape, launch);
        R3_CU(driver().cuStreamSynchronize(stream_.get()));
        SecondInput& second = *launch.second;
        for (std::size_t r = 0; r < launch.regions.size(); ++r) {
          const PreparedRegion& region = launch.regions[r];
          const CUdeviceptr target = live(region, loaded);
          if (target == 0) continue;
          auto expected = std::make_shared<std::vector<std::byte>>(region.recorded.size);
          R3_CU(driver().cuMemcpyDtoH(expected->data(), target, expected->size()));
          std::span<const std::byte> before;
          if (second.before[r]) before = *second.before[r]->host;
          second.references[r] =
              second_input_reference(*expected, before, region.recorded.element_type);
          second.expected[r] = add_copy(std::move(expected));
        }
        restore(launch, loaded, /*all=*/true);
      }
      R3_CU(driver().cuStreamSynchronize(stream_.get()));
    } catch (const CudaError& e) {
      if (e.sticky()) {
        device_.mark_lost(e.message());
        throw Error("kernel '" + kernel_name_ +
                    "': the application's code fails on the second input that verifies "
                    "candidates (its floating-point inputs moved a little): " + e.message());
      }
      drop("the application's code fails on it: " + e.message());
    }
  }

  // The copies r3 restores from and verifies with are device memory a kernel can reach: one
  // that changed them (to make its wrong result compare equal, or to spoil the next
  // candidate's inputs) fails, and they are put back from the host.
  void check_reference_copies() {
    std::vector<cuda::GpuCompare::Buffer> buffers;
    std::vector<std::uint64_t> as_uploaded;
    for (const auto& c : copies_) {
      if (!c->device) continue;
      buffers.push_back({c->device, c->host->size()});
      as_uploaded.push_back(c->device_hash);
    }
    if (zeros_) {
      buffers.push_back({zeros_, zeros_bytes_});
      as_uploaded.push_back(zeros_hash_);
    }
    const std::vector<std::uint64_t> now = compare_.keyed_hashes(buffers, stream_.get());
    std::size_t changed = 0;
    for (std::size_t i = 0; i < now.size(); ++i) changed += now[i] != as_uploaded[i];
    if (changed > 0)
      throw Error(std::to_string(changed) +
                  " of r3's reference copies on the device changed while the candidate ran (its "
                  "kernel wrote outside its regions, into memory r3 restores or verifies with): "
                  "not verified");
  }

  // Out-of-bounds writes: the mapped bytes no region covers must still be zero, compared on the
  // GPU with a buffer of zeros (and zeroed again when they are not).
  bool check_unrecorded(LaunchResult& out) {
    const cuda::Driver& d = driver();
    bool clean = true;
    for (const UnrecordedSpan& span : unrecorded_) {
      const CUdeviceptr live = memory_.live(span.address);
      RegionCheck check;
      if (zeros_) {
        compare_.compare(live, zeros_, 0, span.size, capture::ElementType::unknown,
                         replay::Tolerance::exact(), stream_.get(), check);
      } else {  // device memory was short: on the host
        std::vector<std::byte> bytes(span.size);
        R3_CU(d.cuStreamSynchronize(stream_.get()));
        R3_CU(d.cuMemcpyDtoH(bytes.data(), live, bytes.size()));
        check = compare_region(bytes, std::vector<std::byte>(span.size),
                               capture::ElementType::unknown, replay::Tolerance::exact());
      }
      if (check.mismatches == 0) continue;
      out.regions.push_back(out_of_bounds_check(span, check.mismatches, check.first_bad_index));
      R3_CU(d.cuMemsetD8Async(live, 0, span.size, stream_.get()));
      clean = false;
    }
    if (!clean) out.verified = false;
    return clean;
  }

  // On the GPU where the expected content is there and the region is aligned to its elements;
  // else on the host, after copying the region back.
  // `before`: what the region held before the launch, where it was expected to change.
  RegionCheck compare(CUdeviceptr actual, const Copy& expected, const Copy* before,
                      capture::ElementType type, const replay::Tolerance& tolerance) {
    const std::vector<std::byte>& reference = *expected.host;
    const std::size_t element = capture::element_size(type);
    const bool before_on_device = before != nullptr && before->device != 0 &&
                                  before->host->size() == reference.size();
    if (!expected.device || actual % element != 0 || (before && !before_on_device)) {
      std::vector<std::byte> copy(reference.size());
      R3_CU(driver().cuStreamSynchronize(stream_.get()));
      R3_CU(driver().cuMemcpyDtoH(copy.data(), actual, copy.size()));
      std::span<const std::byte> prior;
      if (before && before->host->size() == reference.size()) prior = *before->host;
      return compare_region(copy, reference, type, tolerance, prior);
    }
    RegionCheck check;
    check.type = type;
    check.size = reference.size();
    check.tolerance = describe(tolerance);
    const std::uint64_t whole = reference.size() / element;
    check.elements = whole + (reference.size() % element != 0 ? 1 : 0);
    compare_.compare(actual, expected.device, before_on_device ? before->device : 0, whole, type,
                     tolerance, stream_.get(), check);
    if (whole * element < reference.size()) {  // a trailing partial element, on the host
      std::vector<std::byte> tail(reference.size() - whole * element);
      R3_CU(driver().cuMemcpyDtoH(tail.data(), actual + whole * element, tail.size()));
      if (std::memcmp(tail.data(), reference.data() + whole * element, tail.size()) != 0) {
        if (check.first_bad_index < 0) check.first_bad_index = static_cast<std::int64_t>(whole);
        ++check.mismatches;
      }
    }
    check.passed = check.mismatches == 0 && !left_work_undone(check);
    return check;
  }

  // Warm-up, then timed launches between CUDA events; the restore (and the L2 flush) before
  // each one lies outside its events.
  void time(const PreparedLaunch& launch, const Loaded& loaded, const LaunchShape& shape,
            const RunOptions& options, LaunchResult& out) {
    const cuda::Driver& d = driver();
    for (std::uint32_t i = 0; i < options.warmup; ++i) {
      restore(launch, loaded, /*all=*/false);
      launch_kernel(loaded.function, shape, launch);
    }
    std::vector<double> samples;
    double restore_total = 0;
    for (std::uint32_t i = 0; i < options.repeats; ++i) {
      R3_CU(d.cuEventRecord(events_[0].get(), stream_.get()));
      restore(launch, loaded, /*all=*/false);
      R3_CU(d.cuEventRecord(events_[1].get(), stream_.get()));
      if (options.flush_l2) flush_l2(i);
      R3_CU(d.cuEventRecord(events_[2].get(), stream_.get()));
      launch_kernel(loaded.function, shape, launch);
      R3_CU(d.cuEventRecord(events_[3].get(), stream_.get()));
      R3_CU(d.cuEventSynchronize(events_[3].get()));
      float restore_ms = 0, run_ms = 0;
      R3_CU(d.cuEventElapsedTime(&restore_ms, events_[0].get(), events_[1].get()));
      R3_CU(d.cuEventElapsedTime(&run_ms, events_[2].get(), events_[3].get()));
      restore_total += restore_ms * 1e-3;
      samples.push_back(run_ms * 1e-3);
    }
    out.time = summarise(std::move(samples));
    out.restore_seconds = options.repeats > 0 ? restore_total / options.repeats : 0;
  }

  // Writes a buffer twice the size of L2 so that the next launch finds nothing of its data there.
  void flush_l2(std::uint32_t round) {
    const cuda::Driver& d = driver();
    if (!flush_buffer_) {
      flush_bytes_ = std::max<std::uint64_t>(2 * device_.l2_bytes(), 1 << 20);
      R3_CU(d.cuMemAlloc(flush_buffer_.replace(), flush_bytes_));
    }
    R3_CU(d.cuMemsetD32Async(flush_buffer_.get(), round, flush_bytes_ / 4, stream_.get()));
  }

  void ensure_stream() {
    if (stream_.get()) return;
    const cuda::Driver& d = driver();
    R3_CU(d.cuStreamCreate(stream_.replace(), CU_STREAM_NON_BLOCKING));
    for (cuda::Event& event : events_) R3_CU(d.cuEventCreate(event.replace(), CU_EVENT_DEFAULT));
  }

  // Device copies of every content, as far as device memory goes; the rest stays on the host.
  // First a buffer of zeros to check the unrecorded bytes against.
  void upload_copies() {
    const cuda::Driver& d = driver();
    short_of_memory_ = false;
    std::uint64_t largest = 0;
    for (const UnrecordedSpan& span : unrecorded_) largest = std::max(largest, span.size);
    if (largest > 0) {
      CUresult status = d.cuMemAlloc(&zeros_, largest);
      if (status == CUDA_ERROR_OUT_OF_MEMORY) {
        zeros_ = 0;
        short_of_memory_ = true;
      } else {
        R3_CU(status);
        R3_CU(d.cuMemsetD8(zeros_, 0, largest));
        zeros_bytes_ = largest;
        zeros_hash_ = compare_.keyed_hash(zeros_, zeros_bytes_, nullptr);
      }
    }
    for (auto& c : copies_) upload(*c);
    if (short_of_memory_)
      log::warning("kernel '", kernel_name_,
                   "': device memory is short; some regions are restored from host memory");
  }

  // A content on the device too, where it has room.
  void upload(Copy& c) {
    const cuda::Driver& d = driver();
    if (c.host->empty()) return;
    CUresult status = d.cuMemAlloc(&c.device, c.host->size());
    if (status == CUDA_ERROR_OUT_OF_MEMORY) {
      c.device = 0;
      short_of_memory_ = true;
      return;
    }
    R3_CU(status);
    R3_CU(d.cuMemcpyHtoD(c.device, c.host->data(), c.host->size()));
    c.device_hash = compare_.keyed_hash(c.device, c.host->size(), nullptr);
  }

  // A content made after the recorded ones (a second input's), kept and checked like them.
  std::shared_ptr<Copy> add_copy(Bytes host) {
    auto c = std::make_shared<Copy>(Copy{std::move(host), 0, 0});
    upload(*c);
    copies_.push_back(c);
    return c;
  }

  // Forgets the copies from `first` on (a second input given up), with their device memory.
  void drop_copies_from(std::size_t first) {
    for (std::size_t i = first; i < copies_.size(); ++i)
      if (copies_[i]->device && !device_.lost()) driver().cuMemFree(copies_[i]->device);
    copies_.resize(std::min(first, copies_.size()));
  }

  void release_copies() {
    if (device_.lost()) return;  // gone with their context
    for (auto& c : copies_) {
      if (c->device) driver().cuMemFree(c->device);
      c->device = 0;
    }
    if (zeros_) driver().cuMemFree(zeros_);
    zeros_ = 0;
  }

  Device& device_;
  cuda::DeviceMemory memory_;
  std::vector<PreparedLaunch> prepared_;
  std::vector<std::shared_ptr<Copy>> copies_;
  bool short_of_memory_ = false;
  std::string kernel_name_;
  std::string instance_name_;  // "MatrixMulCUDA<32>" for a template instance, else ""
  std::string demangled_name_;
  std::string recorded_source_, recorded_ptx_, recorded_cubin_, recorded_architecture_;
  cuda::Stream stream_;
  cuda::Event events_[4];
  cuda::DeviceBuffer flush_buffer_;
  CUdeviceptr zeros_ = 0;  // as large as the largest unrecorded span
  std::uint64_t zeros_bytes_ = 0;
  std::uint64_t zeros_hash_ = 0;  // GpuCompare::keyed_hash of zeros_
  bool launched_ = false;  // the candidate being run reached the GPU
  std::vector<UnrecordedSpan> unrecorded_;
  std::uint64_t flush_bytes_ = 0;
  cuda::GpuCompare compare_;
  CompiledCache cache_;
  std::set<std::string> recorded_variables_;  // module variables the capture holds as regions
  struct Kept {
    Loaded loaded;
    std::uint64_t last_use = 0;
  };
  static constexpr std::size_t kLoadedModules = 32;
  std::mutex loaded_mutex_;  // guards loaded_ and uses_; taken alone, never with another lock
  std::map<Hash128, Kept> loaded_;
  std::uint64_t uses_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace r3::replay
