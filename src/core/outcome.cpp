#include "r3/outcome.hpp"

#include "r3/enum_names.hpp"

namespace r3 {
namespace {
constexpr EnumNames<Outcome, 6> kOutcomes{{
    {Outcome::ok, "ok"},
    {Outcome::compile_error, "compile error"},
    {Outcome::launch_error, "launch error"},
    {Outcome::wrong_result, "wrong result"},
    {Outcome::timeout, "timeout"},
    {Outcome::crash, "crash"},
}};
}  // namespace

std::string_view to_string(Outcome outcome) { return name_of(kOutcomes, outcome); }

std::optional<Outcome> outcome_from_string(std::string_view text) {
  return value_named(kOutcomes, text);
}

}  // namespace r3
