// A client for OpenAI-compatible chat-completion endpoints (vLLM, llama.cpp server, Ollama,
// hosted APIs) on libcurl's multi interface: many requests in flight, driven from one thread.
//
//   LlmClient client(config.llm, config.budget.llm_cost);
//   client.submit({messages, tag});
//   while (client.busy()) for (ChatResult& r : client.poll(100ms)) ...
//
// Retries with exponential backoff and jitter on 429, 5xx, timeouts and network errors,
// honouring Retry-After; counts tokens and cost, and refuses new requests once the budget is
// spent. The API key is read from the environment variable the configuration names, sent only
// in the Authorization header, and never logged or written anywhere.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "r3/evolve/options.hpp"

namespace r3::evolve {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

struct ChatRequest {
  std::vector<ChatMessage> messages;
  std::uint64_t tag = 0;  // the caller's name for the request, returned with its result
};

enum class ChatStatus {
  ok,
  http_error,       // a response other than 200 that retries did not cure (or 4xx)
  timeout,          // no complete answer within llm.timeout, after every retry
  network_error,    // no connection (unreachable endpoint, DNS, TLS), after every retry
  malformed,        // 200, but not a chat completion (bad JSON, no choices)
  budget_exceeded,  // refused: the LLM budget is spent
};
std::string_view to_string(ChatStatus status);

struct Usage {
  std::uint64_t prompt_tokens = 0;
  std::uint64_t completion_tokens = 0;
  double cost = 0;  // in the units of llm.prompt_cost_per_mtok / completion_cost_per_mtok
};

struct ChatResult {
  std::uint64_t tag = 0;
  ChatStatus status = ChatStatus::ok;
  std::string content;  // the assistant's message
  std::string error;    // why, when not ok (names the endpoint and status, never the key)
  int http_status = 0;  // of the last attempt
  int attempts = 0;
  double seconds = 0;  // from submit to result
  Usage usage;
};

class LlmClient {
 public:
  // Throws ConfigError when the endpoint is not set. `budget`: the cost at which new requests
  // are refused (0: no limit).
  LlmClient(const evolve::LlmOptions& config, double budget);
  ~LlmClient();
  LlmClient(const LlmClient&) = delete;
  LlmClient& operator=(const LlmClient&) = delete;

  // Queues a request; it starts as soon as fewer than llm.concurrency are in flight.
  void submit(ChatRequest request);
  // Drives the transfers for at most `wait` and returns the requests that finished.
  std::vector<ChatResult> poll(std::chrono::milliseconds wait);
  bool busy() const;  // queued, in flight or waiting to retry
  std::size_t in_flight() const;

  const Usage& usage() const;  // of every finished request
  bool budget_exhausted() const;
  // Base for the retry backoff (tests shorten it): delay = base * 2^attempt, jittered.
  void set_backoff_base(std::chrono::milliseconds base);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "" when something answers HTTP at llm.endpoint (a HEAD of <endpoint>/models, whatever its
// status), else why not (connection refused, DNS, TLS, timeout): checked before a job starts.
std::string check_endpoint(const evolve::LlmOptions& config);

}  // namespace r3::evolve
