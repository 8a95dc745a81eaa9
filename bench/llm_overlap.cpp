// bench/llm_overlap: how much the LLM client overlaps requests. A local OpenAI-compatible server
// answers every request after a fixed delay; the client sends N requests with a concurrency
// limit C from one thread. Ideal: ceil(N / C) x delay; one at a time: N x delay.
//
//   llm_overlap [--requests 32] [--concurrency 8] [--delay 2.0]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "chat_server.hpp"
#include "r3/error.hpp"
#include "r3/evolve/llm_client.hpp"

int main(int argc, char** argv) {
  int requests = 32, concurrency = 8;
  double delay = 2.0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "llm_overlap: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--requests") {
      requests = std::stoi(value());
    } else if (arg == "--concurrency") {
      concurrency = std::stoi(value());
    } else if (arg == "--delay") {
      delay = std::stod(value());
    } else {
      std::printf(
          "usage: llm_overlap [--requests N] [--concurrency C] [--delay SECONDS]\n"
          "  sends N chat requests (default 32) with at most C in flight (default 8) to a local\n"
          "  server that answers each after SECONDS (default 2.0), and prints the elapsed time "
          "next\n"
          "  to the ideal ceil(N/C) x delay and the serial N x delay\n");
      return arg == "-h" || arg == "--help" ? 0 : 2;
    }
  }
  try {
    r3::bench::ChatServer server(
        [delay](const r3::bench::ReceivedRequest&, std::size_t) {
          auto reply = r3::bench::ChatReply::completion("```cpp\n// nothing\n```");
          reply.delay = std::chrono::milliseconds(static_cast<long>(delay * 1000));
          return reply;
        },
        static_cast<std::size_t>(concurrency) + 4);
    r3::evolve::LlmOptions config;
    config.endpoint = server.endpoint();
    config.model = "r3-bench";
    config.api_key_env = "";
    config.concurrency = static_cast<std::uint32_t>(concurrency);
    config.timeout_s = delay * 4 + 10;
    r3::evolve::LlmClient client(config, 0);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < requests; ++i) {
      client.submit({{{"user", "request " + std::to_string(i)}}, static_cast<std::uint64_t>(i)});
    }
    int ok = 0, failed = 0;
    while (client.busy()) {
      for (const auto& result : client.poll(std::chrono::milliseconds(200))) {
        if (result.status == r3::evolve::ChatStatus::ok) {
          ++ok;
        } else {
          ++failed;
          std::fprintf(stderr, "llm_overlap: request %llu: %s\n",
                       static_cast<unsigned long long>(result.tag), result.error.c_str());
        }
      }
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double ideal = std::ceil(static_cast<double>(requests) / concurrency) * delay;
    const double serial = requests * delay;
    std::printf("llm_overlap: %d requests, concurrency %d, server delay %.2f s\n", requests,
                concurrency, delay);
    std::printf("  answered %d, failed %d, most in flight at the server %zu\n", ok, failed,
                server.max_concurrent());
    std::printf(
        "  elapsed %.2f s   ideal %.2f s   serial %.2f s   serial/elapsed %.2fx   elapsed/ideal "
        "%.3f\n",
        elapsed, ideal, serial, serial / elapsed, elapsed / ideal);
    return failed == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llm_overlap: %s\n", e.what());
    return 1;
  }
}
