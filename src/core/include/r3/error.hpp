// Typed errors of r3. Library code throws these; drivers catch r3::Error at the top, print what()
// and exit non-zero. Every error carries the context a user needs to act on it: the file, the line
// and key in tune.yaml, the kernel.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace r3 {

struct ErrorContext {
  std::string file;    // tune.yaml, capture file, source file ("" if none)
  int line = 0;        // 1-based; 0 when unknown
  int column = 0;      // 1-based; 0 when unknown
  std::string key;     // dotted tune.yaml key ("search.levels.launch.block_x"), or a capture path
  std::string kernel;  // kernel name
};

// Context naming only a file.
inline ErrorContext in_file(std::string file) {
  ErrorContext context;
  context.file = std::move(file);
  return context;
}

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, ErrorContext context = {});

  // The message without the context prefix.
  const std::string& message() const noexcept { return message_; }
  const ErrorContext& context() const noexcept { return context_; }

 private:
  std::string message_;
  ErrorContext context_;
};

// A bad tune.yaml: syntax, unknown key, wrong type, value out of range, reference to a missing
// file.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A capture or run file whose content r3 refuses: foreign format, newer version, damaged data,
// dangling content reference, missing field.
class FormatError : public Error {
 public:
  using Error::Error;
};

// A failing operating-system or library call (open, HDF5, CUDA, ...). `api` names the call.
class IoError : public Error {
 public:
  IoError(std::string api, std::string message, ErrorContext context = {});
  const std::string& api() const noexcept { return api_; }

 private:
  std::string api_;
};

// A kernel asked for by name that the capture does not hold.
class UnknownKernelError : public Error {
 public:
  using Error::Error;
};

// Wrong command-line use.
class UsageError : public Error {
 public:
  using Error::Error;
};

// A feature this build of r3 does not contain (configured without it, or not implemented yet).
class NotAvailableError : public Error {
 public:
  using Error::Error;
};

// "FILE:LINE:COLUMN: " (parts that are unknown are left out), then "key 'K': ", "kernel 'K': ".
std::string format_context(const ErrorContext& context);

}  // namespace r3
