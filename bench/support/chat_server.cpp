#include "chat_server.hpp"

#include <httplib.h>

#include <sys/socket.h>

#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

namespace r3::bench {

ChatReply ChatReply::completion(const std::string& content, int prompt_tokens,
                                int completion_tokens) {
  nlohmann::json reply = {{"id", "chatcmpl-r3-test"},
                          {"object", "chat.completion"},
                          {"model", "r3-test-model"},
                          {"choices",
                           {{{"index", 0},
                             {"message", {{"role", "assistant"}, {"content", content}}},
                             {"finish_reason", "stop"}}}},
                          {"usage",
                           {{"prompt_tokens", prompt_tokens},
                            {"completion_tokens", completion_tokens},
                            {"total_tokens", prompt_tokens + completion_tokens}}}};
  return {200, reply.dump(), {}, std::chrono::milliseconds(0)};
}

struct ChatServer::Impl {
  Script script;
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
  int port = 0;
  bool tls = false;
  mutable std::mutex mutex;
  std::condition_variable stopping_cv;
  bool stopping = false;
  std::vector<ReceivedRequest> received;
  std::size_t concurrent = 0, max_concurrent = 0;

  void start(std::size_t threads) {
    server->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    server->Post("/v1/chat/completions",
                 [this](const httplib::Request& request, httplib::Response& response) {
                   answer(request, response);
                 });
    // cpp-httplib listens with a backlog of 5, so that a client opening many connections at
    // once sees SYNs dropped and retried a second later; production servers accept thousands.
    // Listening again on the same socket raises the backlog (Linux).
    socket_t listening = -1;
    server->set_socket_options([&listening](socket_t socket) {
      httplib::default_socket_options(socket);
      listening = socket;
    });
    port = server->bind_to_any_port("127.0.0.1");
    if (port <= 0) throw std::runtime_error("chat server: cannot bind a port on 127.0.0.1");
    if (listening >= 0) ::listen(listening, 1024);
    thread = std::thread([this] { server->listen_after_bind(); });
    // stop() before the accept loop runs would be lost, and the loop would never end.
    while (!server->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // bind_to_any_port already listens: connections wait in the backlog until the loop runs.
  }

  void answer(const httplib::Request& request, httplib::Response& response) {
    nlohmann::json body = nlohmann::json::parse(request.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.contains("model") || !body.contains("messages") ||
        !body["messages"].is_array()) {
      response.status = 400;
      response.set_content(R"({"error":{"message":"not a chat completion request"}})",
                           "application/json");
      return;
    }
    ReceivedRequest received_request{request.body, request.get_header_value("Authorization")};
    std::size_t index;
    {
      std::lock_guard lock(mutex);
      index = received.size();
      received.push_back(received_request);
      max_concurrent = std::max(max_concurrent, ++concurrent);
    }
    ChatReply reply = script(received_request, index);
    {
      std::unique_lock lock(mutex);
      stopping_cv.wait_for(lock, reply.delay, [this] { return stopping; });
      --concurrent;
    }
    response.status = reply.status;
    for (const auto& [name, value] : reply.headers) response.set_header(name, value);
    response.set_content(reply.body, "application/json");
  }
};

ChatServer::ChatServer(Script script, std::size_t threads) : impl_(std::make_unique<Impl>()) {
  impl_->script = std::move(script);
  impl_->server = std::make_unique<httplib::Server>();
  impl_->start(threads);
}

ChatServer::ChatServer(Script script, const Tls& tls, std::size_t threads)
    : impl_(std::make_unique<Impl>()) {
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  impl_->script = std::move(script);
  auto server =
      std::make_unique<httplib::SSLServer>(tls.certificate.c_str(), tls.private_key.c_str());
  if (!server->is_valid())
    throw std::runtime_error("chat server: cannot use the TLS certificate " +
                             tls.certificate.string());
  impl_->server = std::move(server);
  impl_->tls = true;
  impl_->start(threads);
#else
  (void)script;
  (void)tls;
  (void)threads;
  throw std::runtime_error("chat server: cpp-httplib was built without TLS support");
#endif
}

ChatServer::~ChatServer() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->stopping_cv.notify_all();
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

bool ChatServer::tls_supported() {
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  return true;
#else
  return false;
#endif
}

std::string ChatServer::endpoint() const {
  return std::string(impl_->tls ? "https" : "http") +
         "://127.0.0.1:" + std::to_string(impl_->port) + "/v1";
}

std::vector<ReceivedRequest> ChatServer::requests() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->received;
}

std::size_t ChatServer::max_concurrent() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->max_concurrent;
}

}  // namespace r3::bench
