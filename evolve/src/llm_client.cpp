#include "r3/evolve/llm_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>

#include "r3/elapsed.hpp"
#include "r3/error.hpp"
#include "r3/log.hpp"
#include "r3/version.hpp"

namespace r3::evolve {
namespace {

using nlohmann::json;

constexpr auto kLongestRetryAfter = std::chrono::seconds(300);
constexpr auto kLongestBackoff = std::chrono::seconds(60);

void initialise_curl() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("curl_global_init failed");
  });
}

// Retry-After: a number of seconds, or an HTTP date.
std::optional<Clock::duration> parse_retry_after(const std::string& value) {
  if (value.empty()) return std::nullopt;
  char* end = nullptr;
  const double seconds = std::strtod(value.c_str(), &end);
  if (end != value.c_str() && seconds >= 0) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }
  std::tm when{};
  if (strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &when) != nullptr) {
    const double delta = std::difftime(timegm(&when), std::time(nullptr));
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::max(0.0, delta)));
  }
  return std::nullopt;
}

// Code and prose keep tabs and line ends; other control characters (terminal escapes, NULs,
// backspaces) are dropped before an answer is logged, stored or compiled.
std::string without_control_characters(std::string text) {
  text.erase(std::remove_if(text.begin(), text.end(),
                            [](char c) {
                              auto u = static_cast<unsigned char>(c);
                              return (u < 0x20 && c != '\n' && c != '\t' && c != '\r') ||
                                     u == 0x7f;
                            }),
             text.end());
  return text;
}

// The start of a server's answer for an error message, without the API key: a server may echo
// the request's headers back.
std::string excerpt(std::string text, const std::string& key) {
  if (!key.empty()) {
    for (std::size_t at; (at = text.find(key)) != std::string::npos;)
      text.replace(at, key.size(), "[key]");
  }
  std::string out = text.substr(0, 300);
  std::replace(out.begin(), out.end(), '\n', ' ');
  return text.size() > 300 ? out + "..." : out;
}

}  // namespace

std::string_view to_string(ChatStatus status) {
  switch (status) {
    case ChatStatus::ok:
      return "ok";
    case ChatStatus::http_error:
      return "HTTP error";
    case ChatStatus::timeout:
      return "timeout";
    case ChatStatus::network_error:
      return "network error";
    case ChatStatus::malformed:
      return "malformed response";
    case ChatStatus::budget_exceeded:
      return "LLM budget exceeded";
  }
  return "?";
}

struct LlmClient::Impl {
  struct Transfer {
    ChatRequest request;
    Clock::time_point submitted;
    int attempts = 0;
    Clock::time_point due;  // when waiting to be retried
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    std::string body, response, retry_after;
    char curl_error[CURL_ERROR_SIZE] = {};
    std::size_t max_bytes = 0;  // llm.max_answer_bytes
    bool too_large = false;     // the answer passed max_bytes and was cut off
  };

  evolve::LlmOptions config;
  double budget = 0;
  std::string url, key;
  CURLM* multi = nullptr;
  std::deque<std::unique_ptr<Transfer>> queued;
  std::list<std::unique_ptr<Transfer>> active, waiting;  // waiting: backing off before a retry
  Usage usage;
  std::chrono::milliseconds backoff_base{1000};
  std::mt19937_64 jitter{std::random_device{}()};

  ~Impl() {
    for (auto* list : {&active}) {
      for (auto& t : *list) release(*t);
    }
    if (multi != nullptr) curl_multi_cleanup(multi);
  }

  bool exhausted() const { return budget > 0 && usage.cost >= budget; }

  void release(Transfer& t) {
    if (t.easy != nullptr) {
      curl_multi_remove_handle(multi, t.easy);
      curl_easy_cleanup(t.easy);
      t.easy = nullptr;
    }
    if (t.headers != nullptr) {
      curl_slist_free_all(t.headers);
      t.headers = nullptr;
    }
  }

  // An answer longer than llm.max_answer_bytes is cut off (curl then ends the transfer with a
  // write error, which fails that request): an endpoint cannot fill this process's memory.
  static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    if (t->response.size() + size * count > t->max_bytes) {
      t->too_large = true;
      return 0;
    }
    t->response.append(data, size * count);
    return size * count;
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
    std::string line(data, size * count);
    constexpr std::string_view kName = "retry-after:";
    std::string lower = line.substr(0, kName.size());
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (lower == kName) {
      std::string value = line.substr(kName.size());
      value.erase(0, value.find_first_not_of(" \t"));
      value.erase(value.find_last_not_of(" \t\r\n") + 1);
      static_cast<Transfer*>(user)->retry_after = value;
    }
    return size * count;
  }

  void start(std::unique_ptr<Transfer> t) {
    t->response.clear();
    t->retry_after.clear();
    t->max_bytes = config.max_answer_bytes;
    t->too_large = false;
    ++t->attempts;
    t->easy = curl_easy_init();
    if (t->easy == nullptr) throw Error("curl_easy_init failed");
    t->headers = curl_slist_append(t->headers, "Content-Type: application/json");
    if (!key.empty())
      t->headers = curl_slist_append(t->headers, ("Authorization: Bearer " + key).c_str());
    const long timeout_ms = static_cast<long>(config.timeout_s * 1000);
    curl_easy_setopt(t->easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, t->body.c_str());
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE, static_cast<long>(t->body.size()));
    curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(t->easy, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 10000L));
    curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(t->easy, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(t->easy, CURLOPT_SSL_VERIFYHOST, 2L);
    if (!config.ca_bundle.empty())
      curl_easy_setopt(t->easy, CURLOPT_CAINFO, config.ca_bundle.c_str());
    t->curl_error[0] = '\0';
    curl_easy_setopt(t->easy, CURLOPT_ERRORBUFFER, t->curl_error);
    curl_easy_setopt(t->easy, CURLOPT_USERAGENT, ("r3/" + std::string(version_string())).c_str());
    curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(t->easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(t->easy, CURLOPT_HEADERDATA, t.get());
    curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t.get());
    curl_multi_add_handle(multi, t->easy);
    log::debug("llm: request ", t->request.tag, " sent to ", url, " (attempt ", t->attempts, ")");
    active.push_back(std::move(t));
  }

  // Starts queued requests and retries that are due, as far as the concurrency allows; once the
  // budget is spent, refuses them instead.
  void fill(std::vector<ChatResult>& results) {
    if (exhausted()) {
      auto refuse = [&](auto& container) {
        for (auto& t : container) {
          results.push_back(finish(*t, ChatStatus::budget_exceeded,
                                   "the LLM budget (budget.llm_cost) is spent", 0));
        }
        container.clear();
      };
      refuse(queued);
      refuse(waiting);
      return;
    }
    const auto now = Clock::now();
    for (auto it = waiting.begin(); it != waiting.end();) {
      if ((*it)->due <= now && active.size() < config.concurrency) {
        start(std::move(*it));
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
    while (!queued.empty() && active.size() < config.concurrency) {
      start(std::move(queued.front()));
      queued.pop_front();
    }
  }

  ChatResult finish(Transfer& t, ChatStatus status, std::string error, int http) {
    ChatResult result;
    result.tag = t.request.tag;
    result.status = status;
    result.error = std::move(error);
    result.http_status = http;
    result.attempts = t.attempts;
    result.seconds = seconds_since(t.submitted);
    return result;
  }

  ChatResult parse_success(Transfer& t) {
    ChatResult result = finish(t, ChatStatus::ok, "", 200);
    try {
      json reply = json::parse(t.response);
      result.content = without_control_characters(
          reply.at("choices").at(0).at("message").at("content").get<std::string>());
      if (reply.contains("usage") && reply["usage"].is_object()) {
        result.usage.prompt_tokens = reply["usage"].value("prompt_tokens", std::uint64_t{0});
        result.usage.completion_tokens =
            reply["usage"].value("completion_tokens", std::uint64_t{0});
      }
    } catch (const std::exception&) {
      result.status = ChatStatus::malformed;
      result.error = url + " answered 200 with something that is not a chat completion: " +
                     excerpt(t.response, key);
      return result;
    }
    result.usage.cost =
        static_cast<double>(result.usage.prompt_tokens) / 1e6 * config.prompt_cost_per_mtok +
        static_cast<double>(result.usage.completion_tokens) / 1e6 * config.completion_cost_per_mtok;
    usage.prompt_tokens += result.usage.prompt_tokens;
    usage.completion_tokens += result.usage.completion_tokens;
    usage.cost += result.usage.cost;
    return result;
  }

  // Retries `t` if it may; returns whether it will be.
  bool retry(std::unique_ptr<Transfer>& t, const std::string& why) {
    if (t->attempts > static_cast<int>(config.max_retries)) return false;
    Clock::duration delay;
    if (auto after = parse_retry_after(t->retry_after)) {
      delay = std::min<Clock::duration>(*after, kLongestRetryAfter);
    } else {
      const double factor = std::uniform_real_distribution<double>(0.5, 1.5)(jitter);
      const auto exponential = backoff_base * (1LL << std::min(t->attempts - 1, 20));
      delay = std::min<Clock::duration>(
          std::chrono::duration_cast<Clock::duration>(exponential * factor), kLongestBackoff);
    }
    t->due = Clock::now() + delay;
    log::info("llm: request ", t->request.tag, ": ", why, "; retrying in ",
              std::chrono::duration<double>(delay).count(), " s (attempt ", t->attempts + 1, " of ",
              config.max_retries + 1, ")");
    waiting.push_back(std::move(t));
    return true;
  }

  void collect(std::vector<ChatResult>& results) {
    int left = 0;
    while (CURLMsg* message = curl_multi_info_read(multi, &left)) {
      if (message->msg != CURLMSG_DONE) continue;
      Transfer* raw = nullptr;
      curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, &raw);
      const CURLcode code = message->data.result;
      long http = 0;
      curl_easy_getinfo(message->easy_handle, CURLINFO_RESPONSE_CODE, &http);
      if (log::enabled(log::Level::debug)) {
        double connect = 0, first_byte = 0, total = 0;
        curl_easy_getinfo(message->easy_handle, CURLINFO_CONNECT_TIME, &connect);
        curl_easy_getinfo(message->easy_handle, CURLINFO_STARTTRANSFER_TIME, &first_byte);
        curl_easy_getinfo(message->easy_handle, CURLINFO_TOTAL_TIME, &total);
        log::debug("llm: request ", raw->request.tag, ": ",
                   curl_easy_strerror(message->data.result), ", HTTP ", http, " (connected ",
                   connect, " s, first byte ", first_byte, " s, total ", total, " s)");
      }
      auto it =
          std::find_if(active.begin(), active.end(), [&](const auto& t) { return t.get() == raw; });
      std::unique_ptr<Transfer> t = std::move(*it);
      active.erase(it);
      release(*t);
      const int status = static_cast<int>(http);
      if (code == CURLE_OK && status == 200) {
        results.push_back(parse_success(*t));
        continue;
      }
      ChatStatus kind;
      std::string why;
      bool retryable;
      if (t->too_large) {
        kind = ChatStatus::malformed;
        why = url + " answered with more than " + std::to_string(config.max_answer_bytes) +
              " bytes (llm.max_answer_bytes); the answer was cut off and dropped";
        retryable = false;
      } else if (code == CURLE_OK) {
        kind = ChatStatus::http_error;
        why = url + " answered HTTP " + std::to_string(status) + ": " + excerpt(t->response, key);
        retryable = status == 429 || status >= 500;
      } else if (code == CURLE_OPERATION_TIMEDOUT) {
        kind = ChatStatus::timeout;
        why = url + " gave no complete answer within " + std::to_string(config.timeout_s) + " s";
        retryable = true;
      } else {
        kind = ChatStatus::network_error;
        why = url + ": " +
              (t->curl_error[0] != '\0' ? std::string(t->curl_error) : curl_easy_strerror(code));
        retryable = code != CURLE_PEER_FAILED_VERIFICATION && code != CURLE_SSL_CACERT_BADFILE &&
                    code != CURLE_UNSUPPORTED_PROTOCOL && code != CURLE_URL_MALFORMAT;
      }
      if (retryable && retry(t, why)) continue;
      results.push_back(finish(*t, kind,
                               why + " (after " + std::to_string(t->attempts) + " attempt" +
                                   (t->attempts == 1 ? "" : "s") + ")",
                               status));
    }
  }
};

LlmClient::LlmClient(const evolve::LlmOptions& config, double budget)
    : impl_(std::make_unique<Impl>()) {
  if (!config.enabled())
    throw ConfigError("no LLM endpoint is configured", ErrorContext{"", 0, 0, "llm.endpoint", ""});
  initialise_curl();
  impl_->config = config;
  impl_->config.concurrency = std::max<std::uint32_t>(1, config.concurrency);
  impl_->budget = budget;
  std::string base = config.endpoint;
  while (!base.empty() && base.back() == '/') base.pop_back();
  impl_->url = base + "/chat/completions";
  if (!config.api_key_env.empty()) {
    if (const char* key = std::getenv(config.api_key_env.c_str()); key != nullptr && *key != '\0') {
      impl_->key = key;
    } else {
      log::warning("llm: the environment variable ", config.api_key_env,
                   " (llm.api_key_env) is not set: requests go without an API key");
    }
  }
  impl_->multi = curl_multi_init();
  if (impl_->multi == nullptr) throw Error("curl_multi_init failed");
}

LlmClient::~LlmClient() = default;

void LlmClient::submit(ChatRequest request) {
  auto t = std::make_unique<Impl::Transfer>();
  t->submitted = Clock::now();
  json messages = json::array();
  for (const ChatMessage& m : request.messages)
    messages.push_back({{"role", m.role}, {"content", m.content}});
  json body = {{"model", impl_->config.model},
               {"messages", messages},
               {"temperature", impl_->config.temperature},
               {"max_tokens", impl_->config.max_tokens}};
  t->body = body.dump();
  t->request = std::move(request);
  impl_->queued.push_back(std::move(t));
}

std::vector<ChatResult> LlmClient::poll(std::chrono::milliseconds wait) {
  std::vector<ChatResult> results;
  const auto deadline = Clock::now() + wait;
  int running = 0;
  while (true) {
    impl_->fill(results);
    curl_multi_perform(impl_->multi, &running);
    impl_->collect(results);
    if (!results.empty()) {
      // Free slots go to queued requests now, not at the next poll.
      impl_->fill(results);
      curl_multi_perform(impl_->multi, &running);
      break;
    }
    const auto now = Clock::now();
    if (!busy() || now >= deadline) break;
    auto until = deadline;
    for (const auto& t : impl_->waiting) until = std::min(until, t->due);
    const auto timeout = std::max<Clock::duration>(Clock::duration::zero(), until - now);
    if (!impl_->active.empty()) {
      // Returns on activity on any transfer's socket, or at curl's own next timer.
      curl_multi_poll(
          impl_->multi, nullptr, 0,
          static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()),
          nullptr);
    } else if (timeout > Clock::duration::zero()) {
      std::this_thread::sleep_for(
          std::min<Clock::duration>(timeout, std::chrono::milliseconds(50)));
    }
  }
  return results;
}

bool LlmClient::busy() const {
  return !impl_->queued.empty() || !impl_->active.empty() || !impl_->waiting.empty();
}

std::size_t LlmClient::in_flight() const { return impl_->active.size(); }
const Usage& LlmClient::usage() const { return impl_->usage; }
bool LlmClient::budget_exhausted() const { return impl_->exhausted(); }
void LlmClient::set_backoff_base(std::chrono::milliseconds base) { impl_->backoff_base = base; }

}  // namespace r3::evolve

namespace r3::evolve {

std::string check_endpoint(const evolve::LlmOptions& config) {
  initialise_curl();
  std::unique_ptr<CURL, void (*)(CURL*)> easy(curl_easy_init(), curl_easy_cleanup);
  if (!easy) return "curl_easy_init failed";
  std::string url = config.endpoint;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += "/models";
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(easy.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy.get(), CURLOPT_NOBODY, 1L);
  curl_easy_setopt(easy.get(), CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(easy.get(), CURLOPT_TIMEOUT_MS, 20000L);
  curl_easy_setopt(easy.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy.get(), CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(easy.get(), CURLOPT_SSL_VERIFYHOST, 2L);
  if (!config.ca_bundle.empty())
    curl_easy_setopt(easy.get(), CURLOPT_CAINFO, config.ca_bundle.c_str());
  curl_easy_setopt(easy.get(), CURLOPT_ERRORBUFFER, error);
  CURLcode code = curl_easy_perform(easy.get());
  if (code == CURLE_OK) return "";  // any HTTP answer: something is listening there
  return "cannot reach " + config.endpoint + ": " + (error[0] ? error : curl_easy_strerror(code));
}

}  // namespace r3::evolve
