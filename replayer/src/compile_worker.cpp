#include "compile_worker.hpp"
#include "helper_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "r3/error.hpp"
#include "r3/replay/compile_pool.hpp"
#include "r3/replay/sandbox.hpp"
#include "r3/replay/wire.hpp"

extern char** environ;

namespace r3::replay {
namespace {

using nlohmann::json;

bool readable_within(int fd, double seconds) {
  pollfd p{fd, POLLIN, 0};
  const int ms = static_cast<int>(seconds * 1000);
  int ready;
  do {
    ready = ::poll(&p, 1, ms);
  } while (ready < 0 && errno == EINTR);
  return ready > 0;
}

}  // namespace

CompileWorker::~CompileWorker() { stop(); }

void CompileWorker::start() {
  // A worker that dies while we write to it must not take this process with it.
  ::signal(SIGPIPE, SIG_IGN);
  const HelperProcess worker = spawn_helper(program_, "--compile-worker");
  pid_ = worker.pid;
  to_ = worker.to;
  from_ = worker.from;
}

void CompileWorker::stop() {
  if (pid_ < 0) return;
  ::close(to_);  // the worker ends at end of file
  ::close(from_);
  to_ = from_ = -1;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    ::usleep(2000);
  }
  pid_ = -1;
}

Translation CompileWorker::translate(const std::string& backend, const std::string& context,
                                     const Variant& variant, double timeout_s) {
  if (pid_ < 0) start();
  const std::string request =
      json{{"backend", backend}, {"context", context}, {"variant", wire::encode(variant)}}.dump();
  std::string header, bytes;
  // A worker that died shows as a closed pipe; one that is silent, as a timeout.
  std::string failure;
  if (!wire::write_message(to_, request)) {
    failure = "the compile worker died before it was sent the variant";
  } else if (!readable_within(from_, timeout_s)) {
    failure = "the compile worker did not answer within " +
              std::to_string(static_cast<int>(timeout_s)) + " s";
  } else {
    try {
      if (!wire::read_message(from_, header) || !readable_within(from_, timeout_s) ||
          !wire::read_message(from_, bytes))
        failure = "the compile worker died while compiling it";
    } catch (const Error& e) {  // a message cut short
      failure = "the compile worker died while answering: " + e.message();
    }
  }
  if (!failure.empty()) {
    stop();
    Translation failed;
    failed.diagnostics = failure;
    return failed;
  }
  json h = json::parse(header, nullptr, false);
  Translation t;
  if (h.is_discarded()) {
    stop();
    t.diagnostics = "the compile worker sent a malformed answer";
    return t;
  }
  t.ok = h.value("ok", false);
  t.diagnostics = h.value("diagnostics", std::string());
  t.ptx = h.value("ptx", false);
  t.function = h.value("function", std::string());
  t.seconds = h.value("seconds", 0.0);
  t.bytes = std::move(bytes);
  return t;
}

int compile_worker_main(int in_fd, int out_fd) {
  ::signal(SIGPIPE, SIG_IGN);
  std::string message;
  while (wire::read_message(in_fd, message)) {
    Translation t;
    try {
      json request = json::parse(message);
      t = translate(request.at("backend").get<std::string>(),
                    request.at("context").get<std::string>(),
                    wire::decode_variant(request.at("variant").get<std::string>()));
    } catch (const std::exception& e) {
      t.ok = false;
      t.diagnostics = std::string("the compile worker could not compile it: ") + e.what();
    }
    const std::string header = json{{"ok", t.ok},
                                    {"diagnostics", t.diagnostics},
                                    {"ptx", t.ptx},
                                    {"function", t.function},
                                    {"seconds", t.seconds}}
                                   .dump(-1, ' ', false, json::error_handler_t::replace);
    if (!wire::write_message(out_fd, header) || !wire::write_message(out_fd, t.bytes)) return 0;
  }
  return 0;
}

}  // namespace r3::replay
