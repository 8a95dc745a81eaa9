// Replay values as text, for the sandbox's pipe and for MPI messages: JSON objects, read back
// exactly (doubles round-trip). Decoding throws FormatError naming what was malformed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "r3/replay/sandbox.hpp"

namespace r3::replay::wire {

std::string encode(const Variant& variant);
Variant decode_variant(std::string_view text);

std::string encode(const RunOptions& options);
RunOptions decode_run_options(std::string_view text);

std::string encode(const Evaluation& evaluation);
Evaluation decode_evaluation(std::string_view text);

std::string encode(const Request& request);
Request decode_request(std::string_view text);

// Candidates to compile ahead (Sandbox::precompile): {"precompile": [request, ...]}.
std::string encode_precompile(const std::vector<Request>& requests);
// The requests when `text` is such a message; nullopt when it is something else (a request).
std::optional<std::vector<Request>> decode_precompile(std::string_view text);

Outcome parse_outcome(std::string_view text);  // what to_string(Outcome) wrote

// Messages on a pipe: an 8-byte little-endian length, then the bytes. write_message returns
// false when the other end is gone; read_message returns false at end of file, and throws
// IoError for a short or oversized message.
inline constexpr std::size_t kHeaderBytes = 8;  // the length before each message
bool write_message(int fd, std::string_view message);
bool read_message(int fd, std::string& message);

}  // namespace r3::replay::wire
