#include "protocol.hpp"

#include <nlohmann/json.hpp>

#include "r3/error.hpp"
#include "r3/replay/wire.hpp"

namespace r3::tune::protocol {
namespace {

using nlohmann::json;

Hash128 hash_of(const json& value, std::string_view what) {
  std::optional<Hash128> hash = Hash128::from_hex(value.get<std::string>());
  if (!hash) throw FormatError(std::string(what) + " is not a 32-digit hash");
  return *hash;
}

json encode_work(const Work& work) {
  json sources = json::object();
  for (const auto& [hash, text] : work.sources) sources[hash.hex()] = text;
  json items = json::array();
  for (const WorkItem& item : work.items)
    items.push_back({{"id", item.id},
                     {"source", item.source.hex()},
                     {"request", json::parse(replay::wire::encode(item.request))}});
  return {{"type", "work"}, {"sources", std::move(sources)}, {"items", std::move(items)}};
}

Work decode_work(const json& j) {
  Work work;
  for (const auto& [hex, text] : j.at("sources").items())
    work.sources[hash_of(json(hex), "a work message's source")] = text.get<std::string>();
  for (const json& item : j.at("items"))
    work.items.push_back({item.at("id").get<std::uint64_t>(),
                          hash_of(item.at("source"), "a work item's source"),
                          replay::wire::decode_request(item.at("request").dump())});
  return work;
}

}  // namespace

std::string encode(const EvaluatorSetup& s) {
  json kernels = json::array();
  for (const auto& k : s.kernels)
    kernels.push_back({{"kernel", k.kernel}, {"launches", k.launches}});
  return json{{"backend", s.backend},
              {"kernels", kernels},
              {"timeout_s", s.timeout_s},
              {"compile_threads", s.compile_threads ? static_cast<int>(*s.compile_threads) : -1},
              {"standby_sandbox", s.standby_sandbox},
              {"capture", s.capture.string()},
              {"log_level", s.log_level},
              {"readable", s.readable},
              {"simulation", s.simulation}}
      .dump();
}

EvaluatorSetup decode_setup(std::string_view text) {
  try {
    json j = json::parse(text);
    EvaluatorSetup s;
    s.backend = j.at("backend").get<std::string>();
    for (const json& k : j.at("kernels"))
      s.kernels.push_back(
          {k.at("kernel").get<std::size_t>(), k.at("launches").get<std::vector<std::size_t>>()});
    s.timeout_s = j.at("timeout_s").get<double>();
    if (int threads = j.at("compile_threads").get<int>(); threads >= 0)
      s.compile_threads = static_cast<std::uint32_t>(threads);
    s.standby_sandbox = j.at("standby_sandbox").get<bool>();
    s.capture = j.at("capture").get<std::string>();
    s.log_level = j.at("log_level").get<std::string>();
    s.readable = j.at("readable").get<std::vector<std::string>>();
    s.simulation = j.at("simulation").get<std::string>();
    return s;
  } catch (const json::exception& e) {
    throw FormatError(std::string("malformed evaluator set-up: ") + e.what());
  }
}

std::string encode(const Ready& ready) {
  return json{{"error", ready.error}, {"depth", ready.depth}}.dump();
}

Ready decode_ready(std::string_view text) {
  try {
    json j = json::parse(text);
    return Ready{j.at("error").get<std::string>(), j.at("depth").get<std::size_t>()};
  } catch (const json::exception& e) {
    throw FormatError(std::string("a malformed answer to the set-up: ") + e.what());
  }
}

std::string encode(const Message& message) {
  json j;
  if (const auto* work = std::get_if<Work>(&message)) {
    j = encode_work(*work);
  } else if (const auto* done = std::get_if<Done>(&message)) {
    j = {{"type", "done"},
         {"id", done->id},
         {"evaluation", json::parse(replay::wire::encode(done->evaluation))},
         {"abandoned", done->abandoned},
         {"restarts", done->restarts}};
  } else if (const auto* stop = std::get_if<Stop>(&message)) {
    j = {{"type", "stop"}, {"status", stop->status}};
  } else {
    j = {{"type", "stopped"}};
  }
  return j.dump();
}

Message decode(std::string_view text) {
  try {
    json j = json::parse(text);
    const std::string type = j.at("type").get<std::string>();
    if (type == "work") return decode_work(j);
    if (type == "done")
      return Done{j.at("id").get<std::uint64_t>(),
                  replay::wire::decode_evaluation(j.at("evaluation").dump()),
                  j.at("abandoned").get<bool>(), j.at("restarts").get<std::size_t>()};
    if (type == "stop") return Stop{j.at("status").get<int>()};
    if (type == "stopped") return Stopped{};
    throw FormatError("a message of unknown type '" + type + "' between ranks");
  } catch (const json::exception& e) {
    throw FormatError(std::string("a malformed message between ranks: ") + e.what());
  }
}

}  // namespace r3::tune::protocol
