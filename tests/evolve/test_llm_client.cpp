// The LLM client against a real HTTP server on 127.0.0.1 that speaks the chat-completions
// protocol and is scripted per test: good answers, malformed JSON, 429 with Retry-After, 5xx,
// 4xx, slow answers, hangs, an unreachable port and a TLS server with a self-signed certificate.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>

#include "chat_server.hpp"
#include "r3/error.hpp"
#include "r3/evolve/llm_client.hpp"
#include "r3/evolve/response.hpp"
#include "r3/log.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace r3::evolve {
namespace {

using bench::ChatReply;
using bench::ChatServer;
using bench::ReceivedRequest;
using namespace std::chrono_literals;

constexpr const char* kKeyVariable = "R3_TEST_LLM_KEY";
constexpr const char* kKey = "sk-r3-test-0123456789-secret";

evolve::LlmOptions config_for(const ChatServer& server) {
  evolve::LlmOptions c;
  c.endpoint = server.endpoint();
  c.model = "r3-test-model";
  c.api_key_env = kKeyVariable;
  c.timeout_s = 10;
  c.concurrency = 4;
  c.max_retries = 3;
  return c;
}

ChatRequest request(std::uint64_t tag, const std::string& text = "make it faster") {
  return {{{"system", "You tune kernels."}, {"user", text}}, tag};
}

// Every result, or a test failure after `limit`.
std::vector<ChatResult> run_all(LlmClient& client, std::chrono::seconds limit = 60s) {
  std::vector<ChatResult> results;
  const auto start = std::chrono::steady_clock::now();
  while (client.busy()) {
    if (std::chrono::steady_clock::now() - start > limit) {
      ADD_FAILURE() << "the client is still busy after " << limit.count() << " s";
      break;
    }
    for (ChatResult& r : client.poll(50ms)) results.push_back(std::move(r));
  }
  std::sort(results.begin(), results.end(),
            [](const ChatResult& a, const ChatResult& b) { return a.tag < b.tag; });
  return results;
}

ChatReply status(int code, std::string body = R"({"error":{"message":"scripted"}})") {
  return {code, std::move(body), {}, 0ms};
}

class LlmClientTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv(kKeyVariable, kKey, 1); }
  void TearDown() override { unsetenv(kKeyVariable); }
};

TEST_F(LlmClientTest, SendsTheProtocolAndCountsTokensAndCost) {
  ChatServer server([](const ReceivedRequest&, std::size_t) {
    return ChatReply::completion("hello", 1000, 500);
  });
  evolve::LlmOptions c = config_for(server);
  c.temperature = 0.25;
  c.max_tokens = 777;
  c.prompt_cost_per_mtok = 2.0;
  c.completion_cost_per_mtok = 10.0;
  LlmClient client(c, 0);
  client.submit(request(1));
  client.submit(request(2, "second"));
  std::vector<ChatResult> results = run_all(client);
  ASSERT_EQ(results.size(), 2u);
  for (const ChatResult& r : results) {
    EXPECT_EQ(r.status, ChatStatus::ok) << r.error;
    EXPECT_EQ(r.content, "hello");
    EXPECT_EQ(r.attempts, 1);
    EXPECT_EQ(r.usage.prompt_tokens, 1000u);
    EXPECT_EQ(r.usage.completion_tokens, 500u);
    EXPECT_DOUBLE_EQ(r.usage.cost, 1000 / 1e6 * 2.0 + 500 / 1e6 * 10.0);
  }
  EXPECT_EQ(client.usage().prompt_tokens, 2000u);
  EXPECT_DOUBLE_EQ(client.usage().cost, 2 * (0.002 + 0.005));

  std::vector<ReceivedRequest> received = server.requests();
  ASSERT_EQ(received.size(), 2u);
  EXPECT_EQ(received[0].authorization, std::string("Bearer ") + kKey);
  nlohmann::json body = nlohmann::json::parse(received[0].body);
  EXPECT_EQ(body["model"], "r3-test-model");
  EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.25);
  EXPECT_EQ(body["max_tokens"], 777);
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["role"], "user");
}

TEST_F(LlmClientTest, WithoutAKeyVariableNoAuthorizationIsSent) {
  ChatServer server(
      [](const ReceivedRequest&, std::size_t) { return ChatReply::completion("ok"); });
  evolve::LlmOptions c = config_for(server);
  c.api_key_env = "";
  LlmClient client(c, 0);
  client.submit(request(1));
  ASSERT_EQ(run_all(client).at(0).status, ChatStatus::ok);
  EXPECT_EQ(server.requests().at(0).authorization, "");
}

// An endpoint cannot fill the job's memory: an answer past llm.max_answer_bytes is cut off and
// fails its request (not retried); one within it arrives whole, control characters dropped.
TEST_F(LlmClientTest, AnswersAreCappedInSizeAndStrippedOfControlCharacters) {
  ChatServer server([](const ReceivedRequest&, std::size_t i) {
    return i == 0 ? ChatReply::completion(std::string(3u << 20, 'x'))
                  : ChatReply::completion("int a;\x1b[2J\a\t// ok\r\n\x7f");
  });
  evolve::LlmOptions c = config_for(server);
  c.concurrency = 1;
  c.max_answer_bytes = 1u << 20;
  LlmClient client(c, 0);
  client.submit(request(1));
  client.submit(request(2));
  std::vector<ChatResult> results = run_all(client);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, ChatStatus::malformed);
  EXPECT_EQ(results[0].attempts, 1);
  EXPECT_NE(results[0].error.find("llm.max_answer_bytes"), std::string::npos) << results[0].error;
  EXPECT_TRUE(results[0].content.empty());
  EXPECT_EQ(results[1].status, ChatStatus::ok) << results[1].error;
  EXPECT_EQ(results[1].content, "int a;[2J\t// ok\r\n");
}

TEST_F(LlmClientTest, MalformedAnswersAreNotRetried) {
  ChatServer server([](const ReceivedRequest&, std::size_t i) {
    return i == 0 ? status(200, "{\"choices\": [ {\"message\": ")
                  : status(200, R"({"object":"chat.completion"})");
  });
  evolve::LlmOptions c = config_for(server);
  c.concurrency = 1;  // the first request gets the first script answer
  LlmClient client(c, 0);
  client.submit(request(1));
  client.submit(request(2));
  std::vector<ChatResult> results = run_all(client);
  ASSERT_EQ(results.size(), 2u);
  for (const ChatResult& r : results) {
    EXPECT_EQ(r.status, ChatStatus::malformed);
    EXPECT_EQ(r.attempts, 1);
    EXPECT_NE(r.error.find(server.endpoint()), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("not a chat completion"), std::string::npos) << r.error;
  }
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST_F(LlmClientTest, HonoursRetryAfterOn429) {
  ChatServer server([](const ReceivedRequest&, std::size_t i) {
    if (i == 0) return ChatReply{429, R"({"error":"slow down"})", {{"Retry-After", "1"}}, 0ms};
    return ChatReply::completion("after waiting");
  });
  LlmClient client(config_for(server), 0);
  client.set_backoff_base(1ms);  // so that only Retry-After can explain a one-second wait
  client.submit(request(1));
  std::vector<ChatResult> results = run_all(client);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, ChatStatus::ok) << results[0].error;
  EXPECT_EQ(results[0].content, "after waiting");
  EXPECT_EQ(results[0].attempts, 2);
  EXPECT_GE(results[0].seconds, 0.95);
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST_F(LlmClientTest, RetriesServerErrorsThenSucceeds) {
  ChatServer server([](const ReceivedRequest&, std::size_t i) {
    if (i == 0) return status(500);
    if (i == 1) return status(503);
    return ChatReply::completion("third time");
  });
  LlmClient client(config_for(server), 0);
  client.set_backoff_base(5ms);
  client.submit(request(1));
  ChatResult r = run_all(client).at(0);
  EXPECT_EQ(r.status, ChatStatus::ok) << r.error;
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(r.content, "third time");
}

TEST_F(LlmClientTest, GivesUpAfterMaxRetries) {
  ChatServer server([](const ReceivedRequest&, std::size_t) { return status(502, "bad gateway"); });
  evolve::LlmOptions c = config_for(server);
  c.max_retries = 2;
  LlmClient client(c, 0);
  client.set_backoff_base(5ms);
  client.submit(request(1));
  ChatResult r = run_all(client).at(0);
  EXPECT_EQ(r.status, ChatStatus::http_error);
  EXPECT_EQ(r.http_status, 502);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_NE(r.error.find("HTTP 502: bad gateway"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("after 3 attempts"), std::string::npos) << r.error;
}

TEST_F(LlmClientTest, ClientErrorsAreNotRetried) {
  ChatServer server(
      [](const ReceivedRequest&, std::size_t) { return status(404, "no such model"); });
  LlmClient client(config_for(server), 0);
  client.submit(request(1));
  ChatResult r = run_all(client).at(0);
  EXPECT_EQ(r.status, ChatStatus::http_error);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_NE(r.error.find("HTTP 404: no such model"), std::string::npos) << r.error;
}

TEST_F(LlmClientTest, AHangingServerTimesOutAndIsRetried) {
  ChatServer server([](const ReceivedRequest&, std::size_t) {
    ChatReply reply = ChatReply::completion("too late");
    reply.delay = 600s;  // ended when the server stops
    return reply;
  });
  evolve::LlmOptions c = config_for(server);
  c.timeout_s = 0.5;
  c.max_retries = 1;
  LlmClient client(c, 0);
  client.set_backoff_base(5ms);
  client.submit(request(1));
  ChatResult r = run_all(client).at(0);
  EXPECT_EQ(r.status, ChatStatus::timeout);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_LT(r.seconds, 5.0) << "the timeout was not applied";
  EXPECT_NE(r.error.find("no complete answer within 0.5"), std::string::npos) << r.error;
}

TEST_F(LlmClientTest, ASlowAnswerWithinTheTimeoutArrives) {
  ChatServer server([](const ReceivedRequest&, std::size_t) {
    ChatReply reply = ChatReply::completion("slow but fine");
    reply.delay = 1200ms;
    return reply;
  });
  evolve::LlmOptions c = config_for(server);
  c.timeout_s = 10;
  LlmClient client(c, 0);
  client.submit(request(1));
  ChatResult r = run_all(client).at(0);
  EXPECT_EQ(r.status, ChatStatus::ok) << r.error;
  EXPECT_EQ(r.attempts, 1);
  EXPECT_GE(r.seconds, 1.1);
}

TEST_F(LlmClientTest, KeepsAtMostConcurrencyRequestsInFlight) {
  ChatServer server([](const ReceivedRequest&, std::size_t) {
    ChatReply reply = ChatReply::completion("ok");
    reply.delay = 200ms;
    return reply;
  });
  evolve::LlmOptions c = config_for(server);
  c.concurrency = 3;
  LlmClient client(c, 0);
  for (std::uint64_t i = 0; i < 9; ++i) client.submit(request(i));
  std::vector<ChatResult> results = run_all(client);
  ASSERT_EQ(results.size(), 9u);
  for (std::uint64_t i = 0; i < 9; ++i) {
    EXPECT_EQ(results[i].tag, i);
    EXPECT_EQ(results[i].status, ChatStatus::ok);
  }
  EXPECT_EQ(server.max_concurrent(), 3u) << "requests were not overlapped, or more than 3 were";
}

TEST_F(LlmClientTest, TheBudgetStopsNewRequests) {
  ChatServer server(
      [](const ReceivedRequest&, std::size_t) { return ChatReply::completion("ok", 1000, 1000); });
  evolve::LlmOptions c = config_for(server);
  c.concurrency = 1;
  c.prompt_cost_per_mtok = 1.0;
  c.completion_cost_per_mtok = 1.0;  // 0.002 per request
  LlmClient client(c, 0.005);
  for (std::uint64_t i = 0; i < 5; ++i) client.submit(request(i));
  std::vector<ChatResult> results = run_all(client);
  ASSERT_EQ(results.size(), 5u);
  int ok = 0, refused = 0;
  for (const ChatResult& r : results) {
    if (r.status == ChatStatus::ok) ++ok;
    if (r.status == ChatStatus::budget_exceeded) {
      ++refused;
      EXPECT_NE(r.error.find("budget.llm_cost"), std::string::npos);
    }
  }
  EXPECT_EQ(ok, 3);  // 0.006 >= 0.005 after the third
  EXPECT_EQ(refused, 2);
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_TRUE(client.budget_exhausted());
}

TEST_F(LlmClientTest, AnUnreachableEndpointIsANetworkErrorNamingIt) {
  std::string endpoint;
  {
    ChatServer closed([](const ReceivedRequest&, std::size_t) { return status(500); });
    endpoint = closed.endpoint();  // a port that nothing listens on once the server is gone
  }
  evolve::LlmOptions c;
  c.endpoint = endpoint;
  c.model = "m";
  c.max_retries = 2;
  c.timeout_s = 5;
  LlmClient client(c, 0);
  client.set_backoff_base(1ms);
  client.submit(request(1));
  ChatResult r = run_all(client).at(0);
  EXPECT_EQ(r.status, ChatStatus::network_error);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_NE(r.error.find(endpoint), std::string::npos) << r.error;
}

TEST_F(LlmClientTest, NoEndpointIsAConfigurationError) {
  try {
    LlmClient client(evolve::LlmOptions{}, 0);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("llm.endpoint"), std::string::npos) << e.what();
  }
}

TEST_F(LlmClientTest, TheKeyIsNeverLoggedNorInErrors) {
  // A server that echoes the request, headers included, into its error messages.
  ChatServer server([](const ReceivedRequest& request, std::size_t i) {
    const std::string echo = "you sent Authorization: " + request.authorization;
    if (i == 0) return ChatReply{429, echo, {{"Retry-After", "0"}}, 0ms};
    if (i == 1) return status(500, echo);
    return status(401, echo);
  });
  std::vector<std::string> lines;
  std::mutex mutex;
  log::set_sink([&](std::string_view line) {
    std::lock_guard lock(mutex);
    lines.emplace_back(line);
  });
  const log::Level before = log::level();
  log::set_level(log::Level::trace);
  {
    LlmClient client(config_for(server), 0);
    client.set_backoff_base(1ms);
    client.submit(request(1));
    ChatResult r = run_all(client).at(0);
    EXPECT_EQ(r.status, ChatStatus::http_error);
    EXPECT_EQ(r.http_status, 401);
    EXPECT_EQ(r.error.find(kKey), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("[key]"), std::string::npos) << r.error;
  }
  log::set_level(before);
  log::set_sink(nullptr);
  EXPECT_GE(lines.size(), 2u) << "retries were not logged";
  for (const std::string& line : lines) EXPECT_EQ(line.find(kKey), std::string::npos) << line;
  EXPECT_EQ(server.requests().size(), 3u);
}

// A self-signed certificate for 127.0.0.1, made with the openssl program.
bool make_certificate(const test::TempDir& dir) {
  test::ProcessResult r = test::run_process(
      {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
       "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout",
       (dir / "key.pem").string(), "-out", (dir / "cert.pem").string()});
  return r.exit_code == 0;
}

TEST_F(LlmClientTest, TlsCertificatesAreVerified) {
  if (!ChatServer::tls_supported()) GTEST_SKIP() << "cpp-httplib was built without TLS support";
  test::TempDir dir;
  if (!make_certificate(dir))
    GTEST_SKIP() << "no openssl program to make a test certificate (apt-get install openssl)";
  ChatServer server(
      [](const ReceivedRequest&, std::size_t) { return ChatReply::completion("over TLS"); },
      ChatServer::Tls{dir / "cert.pem", dir / "key.pem"});
  ASSERT_EQ(server.endpoint().rfind("https://", 0), 0u);
  {
    // Not signed by any CA the system trusts: refused at once, not retried.
    LlmClient client(config_for(server), 0);
    client.set_backoff_base(1ms);
    client.submit(request(1));
    ChatResult r = run_all(client).at(0);
    EXPECT_EQ(r.status, ChatStatus::network_error);
    EXPECT_EQ(r.attempts, 1);
    EXPECT_NE(r.error.find("certificate"), std::string::npos) << r.error;
    EXPECT_TRUE(server.requests().empty());
  }
  {
    // With the certificate as the CA bundle (llm.ca_bundle), the same server is trusted.
    evolve::LlmOptions c = config_for(server);
    c.ca_bundle = dir / "cert.pem";
    LlmClient client(c, 0);
    client.submit(request(2));
    ChatResult r = run_all(client).at(0);
    EXPECT_EQ(r.status, ChatStatus::ok) << r.error;
    EXPECT_EQ(r.content, "over TLS");
  }
}

TEST_F(LlmClientTest, AnswersBecomeCandidatesOrReasons) {
  const std::string parent = "__global__ void k(float* y) {\n  y[0] = 1.0f;\n}\n";
  ChatServer server([](const ReceivedRequest&, std::size_t i) {
    if (i == 0)
      return ChatReply::completion(
          "<<<<<<< SEARCH\n  y[0] = 1.0f;\n=======\n  y[0] = 2.0f;\n>>>>>>> REPLACE\n");
    if (i == 1)
      return ChatReply::completion("```cuda\n__global__ void k(double* y) { y[0] = 2; }\n```");
    return ChatReply::completion("Sorry, I cannot help with that.");
  });
  evolve::LlmOptions c = config_for(server);
  c.concurrency = 1;
  LlmClient client(c, 0);
  for (std::uint64_t i = 0; i < 3; ++i) client.submit(request(i));
  std::vector<ChatResult> results = run_all(client);
  ASSERT_EQ(results.size(), 3u);
  Candidate edited = candidate_from_response(parent, results[0].content, "k");
  EXPECT_TRUE(edited.ok) << edited.reason;
  EXPECT_NE(edited.source.find("2.0f"), std::string::npos);
  Candidate broken = candidate_from_response(parent, results[1].content, "k");
  EXPECT_FALSE(broken.ok);
  EXPECT_NE(broken.reason.find("signature"), std::string::npos) << broken.reason;
  Candidate empty = candidate_from_response(parent, results[2].content, "k");
  EXPECT_FALSE(empty.ok);
  EXPECT_NE(empty.reason.find("no code"), std::string::npos) << empty.reason;
}

}  // namespace
}  // namespace r3::evolve
