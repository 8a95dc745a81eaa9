#include "r3/error.hpp"

#include <utility>

namespace r3 {

std::string format_context(const ErrorContext& context) {
  std::string out;
  if (!context.file.empty()) {
    out += context.file;
    if (context.line > 0) {
      out += ':' + std::to_string(context.line);
      if (context.column > 0) out += ':' + std::to_string(context.column);
    }
    out += ": ";
  }
  if (!context.key.empty()) out += context.key + ": ";
  if (!context.kernel.empty()) out += "kernel '" + context.kernel + "': ";
  return out;
}

Error::Error(std::string message, ErrorContext context)
    : std::runtime_error(format_context(context) + message),
      message_(std::move(message)),
      context_(std::move(context)) {}

IoError::IoError(std::string api, std::string message, ErrorContext context)
    : Error(api + ": " + message, std::move(context)), api_(std::move(api)) {}

}  // namespace r3
