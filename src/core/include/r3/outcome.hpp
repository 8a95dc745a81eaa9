// How a candidate ended. One enum for the replay backends, the wire between ranks, the tuning job,
// the run database and the report; the text is only at the edges (files, the wire, messages).
#pragma once

#include <optional>
#include <string_view>

namespace r3 {

// Anything but `ok` means the candidate is not a valid result.
enum class Outcome { ok, compile_error, launch_error, wrong_result, timeout, crash };

// "ok", "compile error", "launch error", "wrong result", "timeout", "crash".
std::string_view to_string(Outcome outcome);
// What to_string wrote; nullopt for anything else.
std::optional<Outcome> outcome_from_string(std::string_view text);

}  // namespace r3
