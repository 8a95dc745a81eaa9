// A compile worker: a process of its own (`r3-sandbox --compile-worker`) that translates
// variants for a CompilePool thread (Backend::translates / compile_translated). NVRTC holds one
// lock for all the compiles of a process, so threads do not compile in parallel; processes do.
// The worker is started on first use and again after it died (a compiler crash fails only the
// variant it was compiling).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "r3/replay/backend.hpp"

namespace r3::replay {

class CompileWorker {
 public:
  explicit CompileWorker(std::filesystem::path program) : program_(std::move(program)) {}
  ~CompileWorker();
  CompileWorker(const CompileWorker&) = delete;
  CompileWorker& operator=(const CompileWorker&) = delete;

  // The variant translated by the worker. A worker that dies or does not answer within
  // `timeout_s` fails this variant (ok = false, diagnostics say why) and is replaced.
  Translation translate(const std::string& backend, const std::string& context,
                        const Variant& variant, double timeout_s = 600);
  pid_t pid() const { return pid_; }  // -1 before the first translation

 private:
  void start();
  void stop();

  std::filesystem::path program_;
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
};

}  // namespace r3::replay
