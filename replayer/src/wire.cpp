#include "r3/replay/wire.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "r3/base64.hpp"
#include "r3/error.hpp"

namespace r3::replay::wire {
namespace {

using nlohmann::json;

// The largest message accepted: a batch carrying a few thousand sources stays far below it.
constexpr std::uint64_t kMaxMessageBytes = std::uint64_t{1} << 32;

replay::Compiler parse_compiler(std::string_view text) {
  if (auto compiler = replay::parse_compiler(text)) return *compiler;
  throw FormatError("unknown compiler '" + std::string(text) + "'");
}

json tolerance_json(const replay::Tolerance& t) {
  return t.bitwise ? json{{"bitwise", true}} : json{{"rtol", t.rtol}, {"atol", t.atol}};
}

replay::Tolerance tolerance_from(const json& j) {
  if (j.value("bitwise", false)) return replay::Tolerance::exact();
  return replay::Tolerance::relative(j.at("rtol").get<double>(), j.at("atol").get<double>());
}

json variant_json(const Variant& v) {
  json j{{"source_name", v.source_name},
         {"source_text", v.source_text},
         {"entry", v.entry},
         {"defines", v.defines},
         {"flags", v.flags},
         {"passes", v.passes},
         {"compiler", replay::to_string(v.compiler)}};
  json dirs = json::array();
  for (const auto& dir : v.include_dirs) dirs.push_back(dir.string());
  j["include_dirs"] = dirs;
  if (v.block) j["block"] = {v.block->x, v.block->y, v.block->z};
  if (v.keep_grid) j["keep_grid"] = true;
  return j;
}

Variant variant_from(const json& j) {
  Variant v;
  v.source_name = j.at("source_name").get<std::string>();
  v.source_text = j.at("source_text").get<std::string>();
  v.entry = j.at("entry").get<std::string>();
  v.defines = j.at("defines").get<std::map<std::string, std::string>>();
  v.flags = j.at("flags").get<std::vector<std::string>>();
  v.passes = j.at("passes").get<std::string>();
  v.compiler = parse_compiler(j.at("compiler").get<std::string>());
  for (const auto& dir : j.at("include_dirs")) v.include_dirs.emplace_back(dir.get<std::string>());
  v.keep_grid = j.value("keep_grid", false);
  if (j.contains("block")) {
    const json& b = j.at("block");
    v.block = capture::Dim3{b.at(0).get<std::uint32_t>(), b.at(1).get<std::uint32_t>(),
                            b.at(2).get<std::uint32_t>()};
  }
  return v;
}

json options_json(const RunOptions& o) {
  json types = json::object();
  for (const auto& [type, tolerance] : o.verify.types)
    types[std::string(capture::to_string(type))] = tolerance_json(tolerance);
  json regions = json::object();
  for (const auto& [name, tolerance] : o.verify.regions) regions[name] = tolerance_json(tolerance);
  json region_types = json::object();
  for (const auto& [name, type] : o.verify.region_types)
    region_types[name] = std::string(capture::to_string(type));
  return json{{"warmup", o.warmup},
              {"repeats", o.repeats},
              {"verify_after_timing", o.verify_after_timing},
              {"flush_l2", o.flush_l2},
              {"return_code", o.return_code},
              {"types", types},
              {"regions", regions},
              {"region_types", region_types}};
}

RunOptions options_from(const json& j) {
  RunOptions o;
  o.warmup = j.at("warmup").get<std::uint32_t>();
  o.repeats = j.at("repeats").get<std::uint32_t>();
  o.verify_after_timing = j.at("verify_after_timing").get<bool>();
  o.flush_l2 = j.at("flush_l2").get<bool>();
  o.return_code = j.value("return_code", false);
  o.verify.types.clear();
  for (const auto& [name, tolerance] : j.at("types").items()) {
    auto type = capture::parse_element_type(name);
    if (!type) throw FormatError("unknown element type '" + name + "'");
    o.verify.types[*type] = tolerance_from(tolerance);
  }
  for (const auto& [name, tolerance] : j.at("regions").items())
    o.verify.regions[name] = tolerance_from(tolerance);
  for (const auto& [name, text] : j.at("region_types").items()) {
    auto type = capture::parse_element_type(text.get<std::string>());
    if (!type) throw FormatError("unknown element type '" + text.get<std::string>() + "'");
    o.verify.region_types[name] = *type;
  }
  o.verify.after_timing = o.verify_after_timing;
  return o;
}

json evaluation_json(const Evaluation& e) {
  json launches = json::array();
  for (const LaunchResult& l : e.run.launches) {
    json regions = json::array();
    for (const RegionCheck& r : l.regions) {
      regions.push_back({{"name", r.name},
                         {"address", r.address},
                         {"size", r.size},
                         {"type", capture::to_string(r.type)},
                         {"expected_to_change", r.expected_to_change},
                         {"out_of_bounds", r.out_of_bounds},
                         {"passed", r.passed},
                         {"elements", r.elements},
                         {"mismatches", r.mismatches},
                         {"changed", r.changed},
                         {"left_unchanged", r.left_unchanged},
                         {"max_error", r.max_error},
                         {"first_bad_index", r.first_bad_index},
                         {"tolerance", r.tolerance}});
    }
    launches.push_back({{"launch", l.launch},
                        {"verified", l.verified},
                        {"regions", regions},
                        {"samples", l.time.samples},
                        {"median", l.time.median},
                        {"min", l.time.min},
                        {"max", l.time.max},
                        {"restore_seconds", l.restore_seconds},
                        {"verify_seconds", l.verify_seconds}});
  }
  const Resources& r = e.resources;
  json code = nullptr;
  if (e.code)
    code = {{"image", base64_encode(e.code->bytes)},
            {"function", e.code->function},
            {"architecture", e.code->architecture},
            {"toolkit", e.code->toolkit}};
  return json{{"outcome", to_string(e.outcome)},
              {"code", code},
              {"message", e.message},
              {"resources",
               {{"registers", r.registers},
                {"spilled_bytes", r.spilled_bytes},
                {"shared_bytes", r.shared_bytes},
                {"code_bytes", r.code_bytes}}},
              {"compile_seconds", e.compile_seconds},
              {"from_cache", e.from_cache},
              {"run",
               {{"outcome", to_string(e.run.outcome)},
                {"message", e.run.message},
                {"seconds", e.run.seconds},
                {"launches", launches}}},
              {"seconds", e.seconds},
              {"process_lost", e.process_lost},
              {"sequence", e.sequence}};
}

Evaluation evaluation_from(const json& j) {
  Evaluation e;
  e.outcome = parse_outcome(j.at("outcome").get<std::string>());
  e.message = j.at("message").get<std::string>();
  e.sequence = j.value("sequence", std::uint64_t{0});
  const json& r = j.at("resources");
  e.resources.registers = r.at("registers").get<int>();
  e.resources.spilled_bytes = r.at("spilled_bytes").get<int>();
  e.resources.shared_bytes = r.at("shared_bytes").get<int>();
  e.resources.code_bytes = r.at("code_bytes").get<std::uint64_t>();
  e.compile_seconds = j.at("compile_seconds").get<double>();
  e.from_cache = j.at("from_cache").get<bool>();
  const json& run = j.at("run");
  e.run.outcome = parse_outcome(run.at("outcome").get<std::string>());
  e.run.message = run.at("message").get<std::string>();
  e.run.seconds = run.at("seconds").get<double>();
  for (const json& l : run.at("launches")) {
    LaunchResult launch;
    launch.launch = l.at("launch").get<std::size_t>();
    launch.verified = l.at("verified").get<bool>();
    for (const json& g : l.at("regions")) {
      RegionCheck check;
      check.name = g.at("name").get<std::string>();
      check.address = g.at("address").get<std::uint64_t>();
      check.size = g.at("size").get<std::uint64_t>();
      check.type = capture::parse_element_type(g.at("type").get<std::string>())
                       .value_or(capture::ElementType::unknown);
      check.expected_to_change = g.at("expected_to_change").get<bool>();
      check.out_of_bounds = g.value("out_of_bounds", false);
      check.passed = g.at("passed").get<bool>();
      check.elements = g.at("elements").get<std::uint64_t>();
      check.mismatches = g.at("mismatches").get<std::uint64_t>();
      check.changed = g.value("changed", std::uint64_t{0});
      check.left_unchanged = g.value("left_unchanged", std::uint64_t{0});
      // JSON has no infinity (a NaN where a number was expected): it travels as null.
      check.max_error = g.at("max_error").is_null() ? std::numeric_limits<double>::infinity()
                                                    : g.at("max_error").get<double>();
      check.first_bad_index = g.at("first_bad_index").get<std::int64_t>();
      check.tolerance = g.at("tolerance").get<std::string>();
      launch.regions.push_back(std::move(check));
    }
    launch.time.samples = l.at("samples").get<std::vector<double>>();
    launch.time.median = l.at("median").get<double>();
    launch.time.min = l.at("min").get<double>();
    launch.time.max = l.at("max").get<double>();
    launch.restore_seconds = l.at("restore_seconds").get<double>();
    launch.verify_seconds = l.at("verify_seconds").get<double>();
    e.run.launches.push_back(std::move(launch));
  }
  e.seconds = j.at("seconds").get<double>();
  e.process_lost = j.at("process_lost").get<bool>();
  if (j.contains("code") && !j.at("code").is_null()) {
    const json& c = j.at("code");
    e.code = Backend::LoadableCode{base64_decode(c.at("image").get<std::string>(), "code image"),
                                   c.at("function").get<std::string>(),
                                   c.at("architecture").get<std::string>(),
                                   c.at("toolkit").get<std::string>()};
  }
  return e;
}

template <class Decode>
auto decode(std::string_view text, std::string_view what, Decode decode_json) {
  try {
    return decode_json(json::parse(text));
  } catch (const json::exception& e) {
    throw FormatError("malformed " + std::string(what) + " message: " + e.what());
  }
}

}  // namespace

Outcome parse_outcome(std::string_view text) {
  if (auto outcome = outcome_from_string(text)) return *outcome;
  throw FormatError("unknown outcome '" + std::string(text) + "'");
}

std::string encode(const Variant& variant) { return variant_json(variant).dump(); }
Variant decode_variant(std::string_view text) { return decode(text, "variant", variant_from); }

std::string encode(const RunOptions& options) { return options_json(options).dump(); }
RunOptions decode_run_options(std::string_view text) {
  return decode(text, "run options", options_from);
}

std::string encode(const Evaluation& evaluation) { return evaluation_json(evaluation).dump(); }
Evaluation decode_evaluation(std::string_view text) {
  return decode(text, "evaluation", evaluation_from);
}

namespace {
json request_json(const Request& request) {
  return json{{"kernel", request.kernel},
              {"variant", variant_json(request.variant)},
              {"options", options_json(request.options)},
              {"sequence", request.sequence}};
}
Request request_from(const json& j) {
  return Request{j.at("kernel").get<std::size_t>(), variant_from(j.at("variant")),
                 options_from(j.at("options")), j.value("sequence", std::uint64_t{0})};
}
}  // namespace

Request decode_request(std::string_view text) { return decode(text, "request", request_from); }

std::string encode_precompile(const std::vector<Request>& requests) {
  json list = json::array();
  for (const Request& request : requests) list.push_back(request_json(request));
  return json{{"precompile", list}}.dump();
}

std::optional<std::vector<Request>> decode_precompile(std::string_view text) {
  return decode(text, "precompile", [](const json& j) -> std::optional<std::vector<Request>> {
    if (!j.is_object() || !j.contains("precompile")) return std::nullopt;
    std::vector<Request> requests;
    for (const json& r : j.at("precompile")) requests.push_back(request_from(r));
    return requests;
  });
}

std::string encode(const Request& request) { return request_json(request).dump(); }

bool write_message(int fd, std::string_view message) {
  unsigned char header[kHeaderBytes];
  std::uint64_t size = message.size();
  for (std::size_t i = 0; i < kHeaderBytes; ++i)
    header[i] = static_cast<unsigned char>(size >> (8 * i));
  auto write_all = [fd](const char* data, std::size_t n) {
    while (n > 0) {
      ssize_t written = ::write(fd, data, n);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) return false;
      data += written;
      n -= static_cast<std::size_t>(written);
    }
    return true;
  };
  return write_all(reinterpret_cast<const char*>(header), sizeof header) &&
         write_all(message.data(), message.size());
}

bool read_message(int fd, std::string& message) {
  auto read_all = [fd](char* data, std::size_t n) -> std::size_t {
    std::size_t done = 0;
    while (done < n) {
      ssize_t got = ::read(fd, data + done, n - done);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw IoError("read", std::strerror(errno));
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    return done;
  };
  unsigned char header[kHeaderBytes];
  std::size_t got = read_all(reinterpret_cast<char*>(header), sizeof header);
  if (got == 0) return false;
  if (got != sizeof header) throw IoError("read", "the pipe ended inside a message header");
  std::uint64_t size = 0;
  for (std::size_t i = 0; i < kHeaderBytes; ++i) size |= std::uint64_t{header[i]} << (8 * i);
  if (size > kMaxMessageBytes)
    throw IoError("read", "a message of " + std::to_string(size) + " bytes is too large");
  message.resize(size);
  if (read_all(message.data(), size) != size)
    throw IoError("read", "the pipe ended inside a message");
  return true;
}

}  // namespace r3::replay::wire
