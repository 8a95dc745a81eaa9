#include "r3/outcome.hpp"

#include <array>
#include <utility>

namespace r3 {
namespace {
constexpr std::array<std::pair<Outcome, std::string_view>, 6> kOutcomes{{
    {Outcome::ok, "ok"},
    {Outcome::compile_error, "compile error"},
    {Outcome::launch_error, "launch error"},
    {Outcome::wrong_result, "wrong result"},
    {Outcome::timeout, "timeout"},
    {Outcome::crash, "crash"},
}};
}  // namespace

std::string_view to_string(Outcome outcome) {
  for (const auto& [value, text] : kOutcomes)
    if (value == outcome) return text;
  return "?";
}

std::optional<Outcome> outcome_from_string(std::string_view text) {
  for (const auto& [value, spelled] : kOutcomes)
    if (spelled == text) return value;
  return std::nullopt;
}

}  // namespace r3
