// Host capture API: wrap the calls of a C/C++ kernel so that `r3 record` can capture them.
//
//   r3::record::call("stencil2d",
//       [&](r3::record::Call& c) {                    // runs only while recording
//         c.source(STENCIL_SOURCE_FILE);
//         c.arg(in).arg(out).arg(n).arg(alpha);       // the kernel's parameters, in order
//         c.region("in", in, n * n).region("out", out, n * n);  // memory it may read or write
//       },
//       [&] { stencil2d(in, out, n, alpha); });       // the call itself
//
// Not under `r3 record`, call() costs one branch and then runs the call. Under `r3 record`, the
// selected calls are written to the capture: argument bytes, the declared regions before the
// call (prologue) and those the call changed (epilogue). The call runs exactly once either way;
// a failure of the recorder is logged and counted, never passed on to the application.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "r3/capture.hpp"

namespace r3::record {

namespace detail {
// Set before main() from the environment `r3 record` gives the application.
extern const bool recording;
}  // namespace detail

inline bool recording() noexcept { return detail::recording; }

// The element type that verification uses for a region of T.
template <class T>
constexpr capture::ElementType element_type_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>)
    return capture::ElementType::f32;
  else if constexpr (std::is_same_v<U, double>)
    return capture::ElementType::f64;
  else if constexpr (std::is_integral_v<U> && sizeof(U) == 1)
    return std::is_signed_v<U> ? capture::ElementType::i8 : capture::ElementType::u8;
  else if constexpr (std::is_integral_v<U> && sizeof(U) == 2)
    return std::is_signed_v<U> ? capture::ElementType::i16 : capture::ElementType::u16;
  else if constexpr (std::is_integral_v<U> && sizeof(U) == 4)
    return std::is_signed_v<U> ? capture::ElementType::i32 : capture::ElementType::u32;
  else if constexpr (std::is_integral_v<U> && sizeof(U) == 8)
    return std::is_signed_v<U> ? capture::ElementType::i64 : capture::ElementType::u64;
  else
    return capture::ElementType::unknown;
}

// A readable C type name for fundamental types and pointers to them ("const float*"), else "".
template <class T>
std::string type_name() {
  if constexpr (std::is_pointer_v<T>) {
    using Pointee = std::remove_pointer_t<T>;
    std::string inner = type_name<std::remove_cv_t<Pointee>>();
    if (inner.empty()) return "";
    return (std::is_const_v<Pointee> ? "const " : "") + inner + "*";
  } else if constexpr (std::is_same_v<T, float>)
    return "float";
  else if constexpr (std::is_same_v<T, double>)
    return "double";
  else if constexpr (std::is_same_v<T, bool>)
    return "bool";
  else if constexpr (std::is_same_v<T, char>)
    return "char";
  else if constexpr (std::is_same_v<T, signed char>)
    return "signed char";
  else if constexpr (std::is_same_v<T, unsigned char>)
    return "unsigned char";
  else if constexpr (std::is_same_v<T, short>)
    return "short";
  else if constexpr (std::is_same_v<T, unsigned short>)
    return "unsigned short";
  else if constexpr (std::is_same_v<T, int>)
    return "int";
  else if constexpr (std::is_same_v<T, unsigned>)
    return "unsigned";
  else if constexpr (std::is_same_v<T, long>)
    return "long";
  else if constexpr (std::is_same_v<T, unsigned long>)
    return "unsigned long";
  else if constexpr (std::is_same_v<T, long long>)
    return "long long";
  else if constexpr (std::is_same_v<T, unsigned long long>)
    return "unsigned long long";
  else if constexpr (std::is_same_v<T, void>)
    return "void";
  else
    return "";
}

// What one recorded call passes and touches.
class Call {
 public:
  // The next parameter of the kernel, passed by value (structs holding pointers too).
  template <class T>
  Call& arg(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>,
                  "a kernel parameter must be trivially copyable to be recorded");
    return add_arg(&value, sizeof(T), alignof(T), type_name<T>(), std::is_pointer_v<T>);
  }
  // Memory the kernel may read or write: `bytes` bytes at `data`.
  Call& region(std::string_view name, const void* data, std::size_t bytes,
               capture::ElementType type = capture::ElementType::unknown);
  template <class T>
  Call& region(std::string_view name, const T* data, std::size_t count) {
    return region(name, static_cast<const void*>(data), count * sizeof(T), element_type_of<T>());
  }
  // The file that defines the kernel; stored in the capture so `r3 replay` can recompile it.
  Call& source(std::string_view path);

  struct Arg {
    std::size_t offset;
    std::size_t size;
    std::string type;
    bool pointer;
  };
  struct DeclaredRegion {
    std::string name;
    const void* data;
    std::size_t bytes;
    capture::ElementType type;
  };
  const std::vector<std::byte>& arg_bytes() const { return args_; }
  const std::vector<Arg>& args() const { return arg_list_; }
  const std::vector<DeclaredRegion>& regions() const { return regions_; }
  const std::string& source_path() const { return source_; }

 private:
  Call& add_arg(const void* data, std::size_t size, std::size_t alignment, std::string type,
                bool pointer);
  std::vector<std::byte> args_;
  std::vector<Arg> arg_list_;
  std::vector<DeclaredRegion> regions_;
  std::string source_;
};

// The recording path of call(); use call().
void record_call(std::string_view kernel, const std::function<void(Call&)>& describe,
                 const std::function<void()>& run);

template <class Describe, class Run>
inline void call(std::string_view kernel, Describe&& describe, Run&& run) {
  if (!recording()) [[likely]] {
    run();
    return;
  }
  record_call(kernel, std::forward<Describe>(describe), std::forward<Run>(run));
}

// What this machine is, as a capture's device (backend "host").
capture::DeviceInfo host_device_info();

// Environment variables through which `r3 record` configures the recorder in the application.
inline constexpr const char* kOutputVariable = "R3_RECORD_OUTPUT";      // capture file
inline constexpr const char* kKernelsVariable = "R3_RECORD_KERNELS";    // regex over names
inline constexpr const char* kLaunchesVariable = "R3_RECORD_LAUNCHES";  // distinct per kernel
inline constexpr const char* kRanksVariable = "R3_RECORD_RANKS";        // "0,3"; empty: all
inline constexpr const char* kCaptureVariable = "R3_RECORD_CAPTURE";    // reachable | all (CUDA)

}  // namespace r3::record
