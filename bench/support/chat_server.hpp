// An OpenAI-compatible chat-completions server on 127.0.0.1 whose answers a script decides: the
// stand-in for an LLM endpoint in the tests and in bench/llm_overlap. It speaks real HTTP (over
// TLS when given a certificate), so the client under test runs exactly as against vLLM or a
// hosted API. Requests other than a well-formed POST /v1/chat/completions get the 4xx a real
// server gives.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace r3::bench {

struct ChatReply {
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds delay{0};  // before answering; a hang is a delay longer than the test
  // A well-formed completion with `content` and the usage counts given.
  static ChatReply completion(const std::string& content, int prompt_tokens = 10,
                              int completion_tokens = 20);
};

struct ReceivedRequest {
  std::string body;           // the JSON the client sent
  std::string authorization;  // its Authorization header
};

class ChatServer {
 public:
  // `index` counts the well-formed requests received so far (0 for the first).
  using Script = std::function<ChatReply(const ReceivedRequest& request, std::size_t index)>;
  struct Tls {
    std::filesystem::path certificate, private_key;  // PEM files
  };

  explicit ChatServer(Script script, std::size_t threads = 16);
  ChatServer(Script script, const Tls& tls,
             std::size_t threads = 16);  // throws without TLS support
  ~ChatServer();                         // ends delayed replies at once, then stops
  ChatServer(const ChatServer&) = delete;
  ChatServer& operator=(const ChatServer&) = delete;

  std::string endpoint() const;  // "http://127.0.0.1:PORT/v1" (https with TLS)
  std::vector<ReceivedRequest> requests() const;
  std::size_t max_concurrent() const;  // the most requests it was answering at one time
  static bool tls_supported();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace r3::bench
